"""String ops: the tf.strings namespace and TF1's top-level string functions.

hashing.py      to_hash_bucket (TF's Hash64), _fast (FarmHash Fingerprint64), _strong (SipHash)
cross.py        sparse.cross, sparse.cross_hashed (SparseCross: feature crosses, hashed as TF's)
join_split.py   string_join, reduce_join, unsorted_segment_join, string_split, strings.split, bytes_split
transform.py    substr, length, strip, lower, upper, regex_replace, regex_full_match
conversion.py   as_string, encode_base64 / decode_base64, strings.format
unicode.py      unicode_transcode, unicode_encode, unicode_decode(_with_offsets), unicode_split(_with_offsets)
ngrams.py       ngrams (StringNGrams)

String tensors are numpy object arrays of bytes (a 0-d value may be the bytes themselves);
`helpers.string_array` / `string_result` convert at the kernel boundary.
"""
