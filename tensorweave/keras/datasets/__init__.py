"""tf.keras.datasets: the small datasets Keras downloads (mnist, cifar10, imdb, ...), read from
Keras's cache (~/.keras/datasets) in Keras's own file formats."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
