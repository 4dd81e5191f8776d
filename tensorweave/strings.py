"""tf.strings: the string ops (ops/strings/) and the string parsers TF1 also exports here."""
from __future__ import annotations

from tensorweave.ops.io.decoding import string_to_number as to_number  # noqa: F401
from tensorweave.ops.strings.conversion import as_string, format  # noqa: F401,A004
from tensorweave.ops.strings.hashing import (  # noqa: F401
    string_to_hash_bucket as to_hash_bucket, string_to_hash_bucket_fast as to_hash_bucket_fast,
    string_to_hash_bucket_strong as to_hash_bucket_strong)
from tensorweave.ops.strings.join_split import (  # noqa: F401
    bytes_split, reduce_join, split, string_join as join, unsorted_segment_join)
from tensorweave.ops.strings.ngrams import ngrams  # noqa: F401
from tensorweave.ops.strings.transform import (  # noqa: F401
    length, lower, regex_full_match, regex_replace, strip, substr, upper)
from tensorweave.ops.strings.unicode import (  # noqa: F401
    unicode_decode, unicode_decode_with_offsets, unicode_encode, unicode_split, unicode_split_with_offsets,
    unicode_transcode)
