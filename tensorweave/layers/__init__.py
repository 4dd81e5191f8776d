"""tf.layers: TF1's layer classes and functions, with TF's variable names ("dense/kernel",
"conv2d_1/bias"); batch normalization's moving-average updates go to UPDATE_OPS."""
from tensorweave.layers.base import InputSpec, Layer  # noqa: F401
from tensorweave.layers.convolutional import (  # noqa: F401
    Conv1D, Conv2D, Conv2DTranspose, Conv3D, Conv3DTranspose, SeparableConv1D, SeparableConv2D, conv1d, conv2d,
    conv2d_transpose, conv3d, conv3d_transpose, separable_conv1d, separable_conv2d)
from tensorweave.layers.core import Dense, Dropout, Flatten, dense, dropout, flatten  # noqa: F401
from tensorweave.layers.normalization import BatchNormalization, batch_normalization  # noqa: F401
from tensorweave.layers.pooling import (  # noqa: F401
    AveragePooling1D, AveragePooling2D, AveragePooling3D, MaxPooling1D, MaxPooling2D, MaxPooling3D, average_pooling1d,
    average_pooling2d, average_pooling3d, max_pooling1d, max_pooling2d, max_pooling3d)
