"""Signal processing: the FFT ops (fft_ops.py) and the tf.signal composites built on them and the
array and math ops (spectral_ops.py: frames, windows, stft, mel filterbanks, DCT)."""
