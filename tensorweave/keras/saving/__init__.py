"""Keras model and weight files: HDF5 (hdf5.py) and the save/load entry points (save.py)."""
