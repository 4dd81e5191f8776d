"""The Keras engine: Layer (base_layer.py), Input (input_layer.py), the functional graph
(network.py), Sequential (sequential.py) and Model (training.py)."""
