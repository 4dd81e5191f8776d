"""tf.signal namespace (TF1 names): the FFT ops, frames, windows, stft and inverse_stft, mel
filterbanks, MFCCs and the DCT."""
from tensorweave import _api

__getattr__, __dir__ = _api.lazy_attributes(__name__)
