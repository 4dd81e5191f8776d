"""Summary ops: ScalarSummary, HistogramSummary, ImageSummary, AudioSummaryV2, TensorSummaryV2
and MergeSummary output a serialized `Summary` protocol buffer (TensorBoard's own protos), as
TF's do (summary_ops.py); encode.py holds what they encode with: TF's histogram buckets, PNG,
16-bit WAV and TensorProto."""
