"""Array ops: constants, shapes, fill, concat/split, pad/tile, slicing, gather/scatter, sort/where,
masks, partitions. Modules import only the ones before them (see tensorweave/ops/__init__.py)."""
