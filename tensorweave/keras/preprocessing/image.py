"""tf.keras.preprocessing.image: images as arrays (load_img, img_to_array, array_to_img, save_img;
Pillow, the "image" extra), random augmentation (rotations, shifts, shear, zoom, flips, channel
and brightness shifts through scipy.ndimage's affine_transform), and ImageDataGenerator, whose
flow and flow_from_directory iterate batches (keras_preprocessing's image module, channels_last,
float32, with Keras's draws from numpy's global random state, so a seed gives Keras's images)."""
from __future__ import annotations

import io
import math
import os
import pathlib
import threading
import warnings

import numpy as np
from scipy import ndimage

from tensorweave.framework.tf_export import tf_export
from tensorweave.keras.utils.data_utils import Sequence

try:   # Pillow is optional: pip install 'tensorweave[image]'
    from PIL import Image as pil_image
    from PIL import ImageEnhance
except ImportError:  # pragma: no cover - exercised only without the extra
    pil_image = ImageEnhance = None

_DATA_FORMATS = ("channels_last", "channels_first")


def _need_pillow(what: str) -> None:
    if pil_image is None:
        raise ImportError(f"{what} needs Pillow: pip install 'tensorweave[image]'")


def _check_data_format(data_format):
    data_format = data_format or "channels_last"
    if data_format not in _DATA_FORMATS:
        raise ValueError(f'data_format must be "channels_last" or "channels_first", not {data_format!r}')
    return data_format


# ---- images and arrays ----

@tf_export("keras.preprocessing.image.array_to_img")
def array_to_img(x, data_format=None, scale=True, dtype="float32"):
    """A PIL image of a rank-3 array (1, 3 or 4 channels); `scale` stretches the values to 0-255."""
    _need_pillow("array_to_img")
    data_format = _check_data_format(data_format)
    x = np.asarray(x, dtype=dtype)
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with shape: {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - np.min(x)
        x_max = np.max(x)
        if x_max != 0:
            x /= x_max
        x *= 255
    if x.shape[2] == 4:
        return pil_image.fromarray(x.astype("uint8"), "RGBA")
    if x.shape[2] == 3:
        return pil_image.fromarray(x.astype("uint8"), "RGB")
    if x.shape[2] == 1:
        if np.max(x) > 255:
            return pil_image.fromarray(x[:, :, 0].astype("int32"), "I")
        return pil_image.fromarray(x[:, :, 0].astype("uint8"), "L")
    raise ValueError(f"Unsupported channel number: {x.shape[2]} (1, 3 or 4)")


@tf_export("keras.preprocessing.image.img_to_array")
def img_to_array(img, data_format=None, dtype="float32"):
    """A PIL image as a rank-3 array (a grayscale image gets a channel axis of 1)."""
    data_format = _check_data_format(data_format)
    x = np.asarray(img, dtype=dtype)
    if x.ndim == 2:
        x = x.reshape((1,) + x.shape if data_format == "channels_first" else x.shape + (1,))
    elif x.ndim == 3:
        if data_format == "channels_first":
            x = x.transpose(2, 0, 1)
    else:
        raise ValueError(f"Unsupported image shape: {x.shape}")
    return x


@tf_export("keras.preprocessing.image.save_img")
def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Saves the array `x` as an image file (the format from `file_format` or the file name)."""
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format in ("jpg", "jpeg"):
        warnings.warn("The JPG format does not support RGBA images, converting to RGB.")
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


_INTERPOLATIONS = {"nearest": 0, "bilinear": 2, "bicubic": 3, "hamming": 5, "box": 4, "lanczos": 1}   # PIL's codes


@tf_export("keras.preprocessing.image.load_img")
def load_img(path, grayscale=False, color_mode="rgb", target_size=None, interpolation="nearest"):
    """The image file at `path` as a PIL image in `color_mode` ("grayscale", "rgb", "rgba"),
    resized to `target_size` (height, width) with `interpolation` when given."""
    _need_pillow("load_img")
    if grayscale:
        color_mode = "grayscale"
    if color_mode not in ("grayscale", "rgb", "rgba"):
        raise ValueError(f'color_mode must be "grayscale", "rgb", or "rgba", not {color_mode!r}')
    if isinstance(path, io.BytesIO):
        img = pil_image.open(path)
    elif isinstance(path, (pathlib.Path, bytes, str)):
        with open(path, "rb") as f:
            try:
                img = pil_image.open(io.BytesIO(f.read()))
            except OSError as e:
                raise ValueError(f"{os.fsdecode(path)} is not an image file Pillow reads: {e}") from e
    else:
        raise TypeError(f"path should be path-like or io.BytesIO, not {type(path)}")
    wanted = {"grayscale": ("L", "I;16", "I"), "rgb": ("RGB",), "rgba": ("RGBA",)}[color_mode]
    if img.mode not in wanted:
        img = img.convert(wanted[0])
    if target_size is not None:
        width_height = (target_size[1], target_size[0])
        if img.size != width_height:
            if interpolation not in _INTERPOLATIONS:
                raise ValueError(f"Invalid interpolation method {interpolation} specified. Supported methods are "
                                 f"{', '.join(_INTERPOLATIONS)}")
            img = img.resize(width_height, _INTERPOLATIONS[interpolation])
    return img


# ---- transforms of one image ----

def flip_axis(x, axis):
    return np.flip(np.asarray(x), axis)


def transform_matrix_offset_center(matrix, x, y):
    """`matrix` about the image's center (x rows, y columns) instead of its corner."""
    o_x = float(x) / 2 - 0.5
    o_y = float(y) / 2 - 0.5
    offset_matrix = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]])
    reset_matrix = np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
    return np.dot(np.dot(offset_matrix, matrix), reset_matrix)


@tf_export("keras.preprocessing.image.apply_affine_transform")
def apply_affine_transform(x, theta=0, tx=0, ty=0, shear=0, zx=1, zy=1, row_axis=0, col_axis=1, channel_axis=2,
                           fill_mode="nearest", cval=0.0, order=1):
    """Rotates by `theta` degrees, shifts by (tx rows, ty columns), shears by `shear` degrees and
    zooms by (zx, zy) the rank-3 image `x`, about its center; points outside are filled per
    `fill_mode` ("constant" with `cval`, "nearest", "reflect", "wrap"), `order` the spline order.
    The axes default to TF 1.15's, channels last (later Keras made them channels first)."""
    if sorted([row_axis, col_axis, channel_axis]) != [0, 1, 2]:
        raise ValueError(f"row_axis, col_axis and channel_axis must be 0, 1 and 2 in some order, got "
                         f"{row_axis}, {col_axis}, {channel_axis}")
    if np.ndim(x) != 3:
        raise ValueError(f"Input arrays must be multi-channel 2D images (rank 3), got shape {np.shape(x)}")
    if channel_axis not in (0, 2):
        raise ValueError("Channels are allowed and the first and last dimensions.")
    matrices = []
    if theta != 0:
        theta = np.deg2rad(theta)
        matrices.append(np.array([[np.cos(theta), -np.sin(theta), 0], [np.sin(theta), np.cos(theta), 0], [0, 0, 1]]))
    if tx != 0 or ty != 0:
        matrices.append(np.array([[1, 0, tx], [0, 1, ty], [0, 0, 1]]))
    if shear != 0:
        shear = np.deg2rad(shear)
        matrices.append(np.array([[1, -np.sin(shear), 0], [0, np.cos(shear), 0], [0, 0, 1]]))
    if zx != 1 or zy != 1:
        matrices.append(np.array([[zx, 0, 0], [0, zy, 0], [0, 0, 1]]))
    if not matrices:
        return x
    transform_matrix = matrices[0]
    for m in matrices[1:]:
        transform_matrix = np.dot(transform_matrix, m)
    h, w = x.shape[row_axis], x.shape[col_axis]
    transform_matrix = transform_matrix_offset_center(transform_matrix, h, w)
    x = np.rollaxis(x, channel_axis, 0)
    if col_axis > row_axis:
        transform_matrix[:, [0, 1]] = transform_matrix[:, [1, 0]]
        transform_matrix[[0, 1]] = transform_matrix[[1, 0]]
    channel_images = [ndimage.affine_transform(x_channel, transform_matrix[:2, :2], transform_matrix[:2, 2],
                                               order=order, mode=fill_mode, cval=cval) for x_channel in x]
    return np.rollaxis(np.stack(channel_images, axis=0), 0, channel_axis + 1)


def _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval, interpolation_order, **transform):
    return apply_affine_transform(x, row_axis=row_axis, col_axis=col_axis, channel_axis=channel_axis,
                                  fill_mode=fill_mode, cval=cval, order=interpolation_order, **transform)


@tf_export("keras.preprocessing.image.random_rotation")
def random_rotation(x, rg, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest", cval=0.0,
                    interpolation_order=1):
    """`x` rotated by a uniform random angle in [-rg, rg] degrees."""
    return _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval, interpolation_order,
                          theta=np.random.uniform(-rg, rg))


@tf_export("keras.preprocessing.image.random_shift")
def random_shift(x, wrg, hrg, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest", cval=0.0,
                 interpolation_order=1):
    """`x` shifted by uniform random fractions in [-hrg, hrg] of its height, [-wrg, wrg] of its width."""
    h, w = x.shape[row_axis], x.shape[col_axis]
    tx = np.random.uniform(-hrg, hrg) * h
    ty = np.random.uniform(-wrg, wrg) * w
    return _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval, interpolation_order, tx=tx, ty=ty)


@tf_export("keras.preprocessing.image.random_shear")
def random_shear(x, intensity, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest", cval=0.0,
                 interpolation_order=1):
    """`x` sheared by a uniform random angle in [-intensity, intensity] degrees."""
    return _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval, interpolation_order,
                          shear=np.random.uniform(-intensity, intensity))


def _check_pair(value, what):
    if len(value) != 2:
        raise ValueError(f"`{what}` should be a tuple or list of two floats. Received: {value}")


@tf_export("keras.preprocessing.image.random_zoom")
def random_zoom(x, zoom_range, row_axis=1, col_axis=2, channel_axis=0, fill_mode="nearest", cval=0.0,
                interpolation_order=1):
    """`x` zoomed by uniform random factors (zx, zy) in `zoom_range` (lower, upper)."""
    _check_pair(zoom_range, "zoom_range")
    zx, zy = (1, 1) if zoom_range[0] == 1 and zoom_range[1] == 1 else np.random.uniform(zoom_range[0],
                                                                                         zoom_range[1], 2)
    return _random_affine(x, row_axis, col_axis, channel_axis, fill_mode, cval, interpolation_order, zx=zx, zy=zy)


@tf_export("keras.preprocessing.image.apply_channel_shift")
def apply_channel_shift(x, intensity, channel_axis=0):
    """Adds `intensity` to every channel, clipped to the image's own minimum and maximum."""
    x = np.rollaxis(x, channel_axis, 0)
    min_x, max_x = np.min(x), np.max(x)
    x = np.stack([np.clip(x_channel + intensity, min_x, max_x) for x_channel in x], axis=0)
    return np.rollaxis(x, 0, channel_axis + 1)


@tf_export("keras.preprocessing.image.random_channel_shift")
def random_channel_shift(x, intensity_range, channel_axis=0):
    """apply_channel_shift by a uniform random intensity in [-intensity_range, intensity_range]."""
    return apply_channel_shift(x, np.random.uniform(-intensity_range, intensity_range), channel_axis=channel_axis)


@tf_export("keras.preprocessing.image.apply_brightness_shift")
def apply_brightness_shift(x, brightness, scale=True):
    """`x` with its brightness multiplied by `brightness` (Pillow's ImageEnhance.Brightness)."""
    _need_pillow("brightness shifts")
    x_min, x_max = np.min(x), np.max(x)
    local_scale = (x_min < 0) or (x_max > 255)
    img = array_to_img(x, scale=local_scale or scale)
    x = img_to_array(ImageEnhance.Brightness(img).enhance(brightness))
    if not scale and local_scale:
        x = x / 255 * (x_max - x_min) + x_min
    return x


@tf_export("keras.preprocessing.image.random_brightness")
def random_brightness(x, brightness_range, scale=True):
    """apply_brightness_shift by a uniform random factor in `brightness_range` (lower, upper)."""
    _check_pair(brightness_range, "brightness_range")
    return apply_brightness_shift(x, np.random.uniform(brightness_range[0], brightness_range[1]), scale)


# ---- batches ----

@tf_export("keras.preprocessing.image.Iterator")
class Iterator(Sequence):
    """Batches of `n` samples, shuffled each epoch when `shuffle` (numpy's global generator, reseeded
    with seed + batches seen when `seed` is given); a Sequence and an endless iterator both.
    Subclasses give _get_batches_of_transformed_samples(index_array)."""
    white_list_formats = ("png", "jpg", "jpeg", "bmp", "ppm", "tif", "tiff")

    def __init__(self, n, batch_size, shuffle, seed):
        self.n = n
        self.batch_size = batch_size
        self.seed = seed
        self.shuffle = shuffle
        self.batch_index = 0
        self.total_batches_seen = 0
        self.lock = threading.Lock()
        self.index_array = None
        self.index_generator = self._flow_index()

    def _set_index_array(self):
        self.index_array = np.random.permutation(self.n) if self.shuffle else np.arange(self.n)

    def __getitem__(self, idx):
        if idx >= len(self):
            raise ValueError(f"Asked to retrieve element {idx}, but the Sequence has length {len(self)}")
        if self.seed is not None:
            np.random.seed(self.seed + self.total_batches_seen)
        self.total_batches_seen += 1
        if self.index_array is None:
            self._set_index_array()
        return self._get_batches_of_transformed_samples(self.index_array[self.batch_size * idx:
                                                                         self.batch_size * (idx + 1)])

    def __len__(self):
        return (self.n + self.batch_size - 1) // self.batch_size

    def on_epoch_end(self):
        self._set_index_array()

    def reset(self):
        self.batch_index = 0

    def _flow_index(self):
        self.reset()
        while True:
            if self.seed is not None:
                np.random.seed(self.seed + self.total_batches_seen)
            if self.batch_index == 0:
                self._set_index_array()
            current_index = 0 if self.n == 0 else (self.batch_index * self.batch_size) % self.n
            self.batch_index = self.batch_index + 1 if self.n > current_index + self.batch_size else 0
            self.total_batches_seen += 1
            yield self.index_array[current_index:current_index + self.batch_size]

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self):
        """The next batch (endless: a new epoch starts after the last)."""
        with self.lock:
            index_array = next(self.index_generator)
        return self._get_batches_of_transformed_samples(index_array)

    def _get_batches_of_transformed_samples(self, index_array):
        raise NotImplementedError(f"{type(self).__name__} must define _get_batches_of_transformed_samples")

    def _save_batch(self, batch_x, index_array, hash_range):
        for i, j in enumerate(index_array):
            img = array_to_img(batch_x[i], self.data_format, scale=True)
            img.save(os.path.join(self.save_to_dir, f"{self.save_prefix}_{j}_{np.random.randint(hash_range)}."
                                                    f"{self.save_format}"))


@tf_export("keras.preprocessing.image.NumpyArrayIterator")
class NumpyArrayIterator(Iterator):
    """Batches of (augmented, standardized) images of the rank-4 array `x`, with `y` and
    `sample_weight` when given: `x` or (x, y) or (x, y, sample_weight). `x` may be (images, other
    arrays), whose other arrays come along untransformed."""

    def __init__(self, x, y, image_data_generator, batch_size=32, shuffle=False, sample_weight=None, seed=None,
                 data_format=None, save_to_dir=None, save_prefix="", save_format="png", subset=None,
                 dtype="float32"):
        data_format = _check_data_format(data_format)
        self.dtype = dtype
        if isinstance(x, (tuple, list)):
            x_misc = [np.asarray(x[1])] if not isinstance(x[1], list) else [np.asarray(xx) for xx in x[1]]
            x = x[0]
            for xx in x_misc:
                if len(x) != len(xx):
                    raise ValueError(f"All of the arrays in `x` should have the same length. Found a pair with: "
                                     f"len(x[0]) = {len(x)}, len(x[?]) = {len(xx)}")
        else:
            x_misc = []
        if y is not None and len(x) != len(y):
            raise ValueError(f"`x` (images tensor) and `y` (labels) should have the same length. Found: "
                             f"x.shape = {np.asarray(x).shape}, y.shape = {np.asarray(y).shape}")
        if sample_weight is not None and len(x) != len(sample_weight):
            raise ValueError(f"`x` (images tensor) and `sample_weight` should have the same length. Found: x.shape = "
                             f"{np.asarray(x).shape}, sample_weight.shape = {np.asarray(sample_weight).shape}")
        if subset is not None:
            if subset not in ("training", "validation"):
                raise ValueError(f'Invalid subset name: {subset!r}; expected "training" or "validation".')
            split_idx = int(len(x) * image_data_generator._validation_split)
            if y is not None and not np.array_equal(np.unique(y[:split_idx]), np.unique(y[split_idx:])):
                raise ValueError("Training and validation subsets have different number of classes after the split. "
                                 "If your numpy arrays are sorted by the label, you might want to shuffle them.")
            part = slice(None, split_idx) if subset == "validation" else slice(split_idx, None)
            x = x[part]
            x_misc = [np.asarray(xx[part]) for xx in x_misc]
            if y is not None:
                y = y[part]
            if sample_weight is not None:
                sample_weight = sample_weight[part]
        self.x = np.asarray(x, dtype=self.dtype)
        self.x_misc = x_misc
        if self.x.ndim != 4:
            raise ValueError(f"Input data in `NumpyArrayIterator` should have rank 4. You passed an array with shape "
                             f"{self.x.shape}")
        channels_axis = 3 if data_format == "channels_last" else 1
        if self.x.shape[channels_axis] not in (1, 3, 4):
            warnings.warn(f'NumpyArrayIterator is set to use the data format convention "{data_format}" (channels on '
                          f"axis {channels_axis}), i.e. expected either 1, 3, or 4 channels on axis {channels_axis}. "
                          f"However, it was passed an array with shape {self.x.shape} "
                          f"({self.x.shape[channels_axis]} channels).")
        self.y = None if y is None else np.asarray(y)
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight)
        self.image_data_generator = image_data_generator
        self.data_format = data_format
        self.save_to_dir = save_to_dir
        self.save_prefix = save_prefix
        self.save_format = save_format
        super().__init__(self.x.shape[0], batch_size, shuffle, seed)

    def _get_batches_of_transformed_samples(self, index_array):
        batch_x = np.zeros((len(index_array),) + self.x.shape[1:], dtype=self.dtype)
        for i, j in enumerate(index_array):
            x = self.x[j]
            params = self.image_data_generator.get_random_transform(x.shape)
            x = self.image_data_generator.apply_transform(x.astype(self.dtype), params)
            batch_x[i] = self.image_data_generator.standardize(x)
        if self.save_to_dir:
            self._save_batch(batch_x, index_array, 1e4)
        batch_x_miscs = [xx[index_array] for xx in self.x_misc]
        output = (batch_x if not batch_x_miscs else [batch_x] + batch_x_miscs,)
        if self.y is None:
            return output[0]
        output += (self.y[index_array],)
        if self.sample_weight is not None:
            output += (self.sample_weight[index_array],)
        return output


def _image_files(directory, white_list_formats, follow_links):
    """(folder, file name) of the images under `directory`, in sorted order."""
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=lambda x: x[0]):
        for fname in sorted(files):
            if fname.lower().endswith(white_list_formats):
                yield root, fname


class _ImageFileIterator(Iterator):
    """What DirectoryIterator and DataFrameIterator share: images read from files (resized to
    target_size in color_mode), transformed and standardized, with labels per class_mode."""

    def _set_processing_attrs(self, image_data_generator, target_size, color_mode, data_format, save_to_dir,
                              save_prefix, save_format, subset, interpolation):
        self.image_data_generator = image_data_generator
        self.target_size = tuple(target_size)
        if color_mode not in ("rgb", "rgba", "grayscale"):
            raise ValueError(f'Invalid color mode: {color_mode!r}; expected "rgb", "rgba", or "grayscale".')
        self.color_mode = color_mode
        self.data_format = _check_data_format(data_format)
        channels = {"rgba": 4, "rgb": 3, "grayscale": 1}[color_mode]
        self.image_shape = (self.target_size + (channels,) if self.data_format == "channels_last"
                            else (channels,) + self.target_size)
        self.save_to_dir = save_to_dir
        self.save_prefix = save_prefix
        self.save_format = save_format
        self.interpolation = interpolation
        if subset is None:
            self.split = None
        elif subset in ("validation", "training"):
            validation_split = image_data_generator._validation_split
            self.split = (0, validation_split) if subset == "validation" else (validation_split, 1)
        else:
            raise ValueError(f'Invalid subset name: {subset!r}; expected "training" or "validation"')
        self.subset = subset

    def _check_class_mode(self, class_mode):
        if class_mode not in self.allowed_class_modes:
            raise ValueError(f"Invalid class_mode: {class_mode}; expected one of: {self.allowed_class_modes}")
        self.class_mode = class_mode

    def _get_batches_of_transformed_samples(self, index_array):
        batch_x = np.zeros((len(index_array),) + self.image_shape, dtype=self.dtype)
        for i, j in enumerate(index_array):
            img = load_img(self.filepaths[j], color_mode=self.color_mode, target_size=self.target_size,
                           interpolation=self.interpolation)
            x = img_to_array(img, data_format=self.data_format)
            img.close()
            if self.image_data_generator:
                params = self.image_data_generator.get_random_transform(x.shape)
                x = self.image_data_generator.apply_transform(x, params)
                x = self.image_data_generator.standardize(x)
            batch_x[i] = x
        if self.save_to_dir:
            self._save_batch(batch_x, index_array, 1e7)
        if self.class_mode == "input":
            batch_y = batch_x.copy()
        elif self.class_mode in ("binary", "sparse"):
            batch_y = np.asarray([self.classes[j] for j in index_array], dtype=self.dtype)
        elif self.class_mode == "categorical":
            batch_y = np.zeros((len(batch_x), len(self.class_indices)), dtype=self.dtype)
            for i, j in enumerate(index_array):
                batch_y[i, self.classes[j]] = 1.0   # a list of classes (multi-label) sets each
        elif self.class_mode == "multi_output":
            batch_y = [output[index_array] for output in self.labels]
        elif self.class_mode == "raw":
            batch_y = self.labels[index_array]
        else:
            return batch_x
        if self.sample_weight is None:
            return batch_x, batch_y
        return batch_x, batch_y, self.sample_weight[index_array]


@tf_export("keras.preprocessing.image.DirectoryIterator")
class DirectoryIterator(_ImageFileIterator):
    """Batches of images read from `directory`, one subfolder per class (sorted, or `classes`), with
    labels per `class_mode`: "categorical" (one-hot), "binary"/"sparse" (the class index),
    "input" (the images), None (no labels)."""
    allowed_class_modes = {"categorical", "binary", "sparse", "input", None}

    def __init__(self, directory, image_data_generator, target_size=(256, 256), color_mode="rgb", classes=None,
                 class_mode="categorical", batch_size=32, shuffle=True, seed=None, data_format=None, save_to_dir=None,
                 save_prefix="", save_format="png", follow_links=False, subset=None, interpolation="nearest",
                 dtype="float32"):
        self._set_processing_attrs(image_data_generator, target_size, color_mode, data_format, save_to_dir,
                                   save_prefix, save_format, subset, interpolation)
        self._check_class_mode(class_mode)
        if not os.path.isdir(directory):
            raise ValueError(f"flow_from_directory: {directory} is not a directory")
        self.directory = directory
        self.dtype = dtype
        if not classes:
            classes = [d for d in sorted(os.listdir(directory)) if os.path.isdir(os.path.join(directory, d))]
        self.num_classes = len(classes)
        self.class_indices = dict(zip(classes, range(len(classes))))
        self.filenames = []
        labels = []
        for subdir in classes:
            class_dir = os.path.join(directory, subdir)
            files = list(_image_files(class_dir, self.white_list_formats, follow_links))
            if self.split:
                files = files[int(self.split[0] * len(files)):int(self.split[1] * len(files))]
            for root, fname in files:
                labels.append(self.class_indices[subdir])
                self.filenames.append(os.path.join(subdir, os.path.relpath(os.path.join(root, fname), class_dir)))
        self.samples = len(self.filenames)
        self.classes = np.array(labels, dtype="int32")
        print(f"Found {self.samples} images belonging to {self.num_classes} classes.")
        self.filepaths = [os.path.join(directory, fname) for fname in self.filenames]
        self.labels = self.classes
        self.sample_weight = None
        super().__init__(self.samples, batch_size, shuffle, seed)


@tf_export("keras.preprocessing.image.DataFrameIterator")
class DataFrameIterator(_ImageFileIterator):
    """Batches of images whose file names (relative to `directory`) are the column `x_col` of a
    pandas DataFrame, with labels from `y_col` per `class_mode`: "categorical" (class names, or
    lists of them, one-hot), "binary"/"sparse" (class names as indices), "raw" (the column's
    values), "multi_output" (y_col a list of columns), "input", None; sample weights from
    `weight_col`. Files that are missing or not images are skipped (validate_filenames)."""
    allowed_class_modes = {"binary", "categorical", "input", "multi_output", "raw", "sparse", None}

    def __init__(self, dataframe, directory=None, image_data_generator=None, x_col="filename", y_col="class",
                 weight_col=None, target_size=(256, 256), color_mode="rgb", classes=None, class_mode="categorical",
                 batch_size=32, shuffle=True, seed=None, data_format="channels_last", save_to_dir=None,
                 save_prefix="", save_format="png", subset=None, interpolation="nearest", dtype="float32",
                 validate_filenames=True):
        self._set_processing_attrs(image_data_generator, target_size, color_mode, data_format, save_to_dir,
                                   save_prefix, save_format, subset, interpolation)
        self._check_class_mode(class_mode)
        self.directory = directory or ""
        self.dtype = dtype
        labelled = class_mode not in ("input", "multi_output", "raw", None)
        if class_mode == "multi_output" and not isinstance(y_col, list):
            raise TypeError(f'If class_mode="multi_output", y_col must be a list. Received {type(y_col).__name__}.')
        columns = {"x": list(dataframe[x_col])}
        if not all(isinstance(x, str) for x in columns["x"]):
            raise TypeError(f"All values in column x_col={x_col} must be strings.")
        if class_mode is not None and class_mode != "input":
            columns["y"] = ([list(dataframe[c]) for c in y_col] if class_mode == "multi_output"
                            else list(dataframe[y_col]))
        if weight_col:
            columns["w"] = np.asarray(list(dataframe[weight_col]))
            if not np.issubdtype(columns["w"].dtype, np.number):
                raise TypeError(f"Column weight_col={weight_col} must be numeric.")
        rows = list(range(len(columns["x"])))
        if validate_filenames:
            rows = [r for r in rows if self._valid_file(columns["x"][r])]
            if len(rows) < len(columns["x"]):
                warnings.warn(f'Found {len(columns["x"]) - len(rows)} invalid image filename(s) in x_col="{x_col}". '
                              "These filename(s) will be ignored.")
        if labelled:
            rows, classes = self._filter_classes(columns["y"], rows, classes, class_mode, y_col)
            self.class_indices = dict(zip(classes, range(len(classes))))
        if self.split:
            rows = rows[int(self.split[0] * len(rows)):int(self.split[1] * len(rows))]
        if labelled:
            self.classes = [[self.class_indices[c] for c in y] if isinstance(y, (list, tuple))
                            else self.class_indices[y] for y in (columns["y"][r] for r in rows)]
            self.labels = self.classes
        elif class_mode == "multi_output":
            self.labels = [np.array([column[r] for r in rows]) for column in columns["y"]]
        elif class_mode == "raw":
            self.labels = np.array([columns["y"][r] for r in rows])
        self.filenames = [columns["x"][r] for r in rows]
        self.sample_weight = columns["w"][rows] if weight_col else None
        self.samples = len(self.filenames)
        validated = "validated" if validate_filenames else "non-validated"
        belonging = f" belonging to {len(classes)} classes" if labelled else ""
        print(f"Found {self.samples} {validated} image filenames{belonging}.")
        self.filepaths = [os.path.join(self.directory, fname) for fname in self.filenames]
        super().__init__(self.samples, batch_size, shuffle, seed)

    def _valid_file(self, fname):
        path = os.path.join(self.directory, fname)
        return fname.lower().endswith(self.white_list_formats) and os.path.isfile(path)

    @staticmethod
    def _filter_classes(labels, rows, classes, class_mode, y_col):
        """The rows with a label among `classes` (labels outside them dropped from lists), and the
        classes: those given, in order, or all labels sorted."""
        for r in rows:
            if not isinstance(labels[r], (str, list, tuple)) or (
                    class_mode in ("binary", "sparse") and not isinstance(labels[r], str)):
                raise TypeError(f'If class_mode="{class_mode}", y_col="{y_col}" column values must be strings'
                                f"{'' if class_mode in ('binary', 'sparse') else ', lists or tuples'}; row {r} is "
                                f"{labels[r]!r}")
        if classes:
            classes = list(dict.fromkeys(classes))
            for r in rows:
                if isinstance(labels[r], (list, tuple)):
                    labels[r] = [c for c in labels[r] if c in classes] or None
                elif labels[r] not in classes:
                    labels[r] = None
            rows = [r for r in rows if labels[r] is not None]
        else:
            classes = sorted({c for r in rows for c in (labels[r] if isinstance(labels[r], (list, tuple))
                                                         else [labels[r]])})
        if class_mode == "binary" and len(classes) != 2:
            raise ValueError(f'If class_mode="binary" there must be 2 classes. Found {len(classes)} classes.')
        return rows, classes


@tf_export("keras.preprocessing.image.ImageDataGenerator")
class ImageDataGenerator:
    """Generates batches of images with real-time data augmentation.

    Standardization (standardize, in this order): preprocessing_function, rescale (a factor),
    samplewise_center / samplewise_std_normalization (per image), featurewise_center /
    featurewise_std_normalization / zca_whitening (per channel, statistics from fit()).
    Augmentation (random_transform): rotation_range (degrees), width_shift_range /
    height_shift_range (a fraction of the size if < 1, else pixels; a list draws from its values),
    shear_range (degrees), zoom_range (a float z for [1 - z, 1 + z], or [lower, upper]),
    channel_shift_range, brightness_range, horizontal_flip, vertical_flip; points outside the
    input filled per fill_mode with cval. validation_split reserves that fraction of the data
    for flow(..., subset="validation").
    """

    def __init__(self, featurewise_center=False, samplewise_center=False, featurewise_std_normalization=False,
                 samplewise_std_normalization=False, zca_whitening=False, zca_epsilon=1e-6, rotation_range=0,
                 width_shift_range=0.0, height_shift_range=0.0, brightness_range=None, shear_range=0.0,
                 zoom_range=0.0, channel_shift_range=0.0, fill_mode="nearest", cval=0.0, horizontal_flip=False,
                 vertical_flip=False, rescale=None, preprocessing_function=None, data_format=None,
                 validation_split=0.0, interpolation_order=1, dtype="float32"):
        # As Keras: whitening and featurewise std need the mean removed; whitening replaces the std.
        self.featurewise_center = featurewise_center or zca_whitening or featurewise_std_normalization
        self.samplewise_center = samplewise_center or samplewise_std_normalization
        self.featurewise_std_normalization = featurewise_std_normalization and not zca_whitening
        self.samplewise_std_normalization = samplewise_std_normalization
        self.zca_whitening = zca_whitening
        self.zca_epsilon = zca_epsilon
        self.rotation_range = rotation_range
        self.width_shift_range = width_shift_range
        self.height_shift_range = height_shift_range
        self.shear_range = shear_range
        self.channel_shift_range = channel_shift_range
        if fill_mode not in ("constant", "nearest", "reflect", "wrap"):
            raise ValueError(f"fill_mode must be constant, nearest, reflect or wrap, not {fill_mode!r}")
        self.fill_mode = fill_mode
        self.cval = cval
        self.horizontal_flip = horizontal_flip
        self.vertical_flip = vertical_flip
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.dtype = dtype
        self.interpolation_order = interpolation_order
        self.data_format = _check_data_format(data_format)
        self.channel_axis, self.row_axis, self.col_axis = (1, 2, 3) if self.data_format == "channels_first" \
            else (3, 1, 2)
        if validation_split and not 0 < validation_split < 1:
            raise ValueError(f"`validation_split` must be strictly between 0 and 1. Received: {validation_split}")
        self._validation_split = validation_split
        self.mean = None
        self.std = None
        self.principal_components = None
        if isinstance(zoom_range, (float, int)):
            self.zoom_range = [1 - zoom_range, 1 + zoom_range]
        elif len(zoom_range) == 2 and all(isinstance(v, (float, int)) for v in zoom_range):
            self.zoom_range = [zoom_range[0], zoom_range[1]]
        else:
            raise ValueError(f"`zoom_range` should be a float or a tuple or list of two floats. Received: {zoom_range}")
        if brightness_range is not None and (not isinstance(brightness_range, (tuple, list))
                                             or len(brightness_range) != 2):
            raise ValueError(f"`brightness_range should be tuple or list of two floats. Received: {brightness_range}")
        self.brightness_range = brightness_range

    def flow(self, x, y=None, batch_size=32, shuffle=True, sample_weight=None, seed=None, save_to_dir=None,
             save_prefix="", save_format="png", subset=None):
        """A NumpyArrayIterator over the images `x` (rank 4) and labels `y`."""
        return NumpyArrayIterator(x, y, self, batch_size=batch_size, shuffle=shuffle, sample_weight=sample_weight,
                                  seed=seed, data_format=self.data_format, save_to_dir=save_to_dir,
                                  save_prefix=save_prefix, save_format=save_format, subset=subset, dtype=self.dtype)

    def flow_from_dataframe(self, dataframe, directory=None, x_col="filename", y_col="class", weight_col=None,
                            target_size=(256, 256), color_mode="rgb", classes=None, class_mode="categorical",
                            batch_size=32, shuffle=True, seed=None, save_to_dir=None, save_prefix="",
                            save_format="png", subset=None, interpolation="nearest", validate_filenames=True,
                            **kwargs):
        """A DataFrameIterator over the image files a pandas DataFrame lists (class_mode "other"
        is the old name of "raw"; has_ext, sort and drop_duplicates are accepted and ignored, as
        by Keras)."""
        if class_mode == "other":
            class_mode = "raw"
        unknown = set(kwargs) - {"has_ext", "sort", "drop_duplicates"}
        if unknown:
            raise TypeError(f"flow_from_dataframe got unexpected keyword arguments {sorted(unknown)}")
        return DataFrameIterator(dataframe, directory, self, x_col=x_col, y_col=y_col, weight_col=weight_col,
                                 target_size=target_size, color_mode=color_mode, classes=classes,
                                 class_mode=class_mode, data_format=self.data_format, batch_size=batch_size,
                                 shuffle=shuffle, seed=seed, save_to_dir=save_to_dir, save_prefix=save_prefix,
                                 save_format=save_format, subset=subset, interpolation=interpolation,
                                 dtype=self.dtype, validate_filenames=validate_filenames)

    def flow_from_directory(self, directory, target_size=(256, 256), color_mode="rgb", classes=None,
                            class_mode="categorical", batch_size=32, shuffle=True, seed=None, save_to_dir=None,
                            save_prefix="", save_format="png", follow_links=False, subset=None,
                            interpolation="nearest"):
        """A DirectoryIterator over the images in the class subfolders of `directory`."""
        return DirectoryIterator(directory, self, target_size=target_size, color_mode=color_mode, classes=classes,
                                 class_mode=class_mode, data_format=self.data_format, batch_size=batch_size,
                                 shuffle=shuffle, seed=seed, save_to_dir=save_to_dir, save_prefix=save_prefix,
                                 save_format=save_format, follow_links=follow_links, subset=subset,
                                 interpolation=interpolation, dtype=self.dtype)

    def standardize(self, x):
        """The normalization of one image (or a batch), in place where the dtype allows."""
        if self.preprocessing_function:
            x = self.preprocessing_function(x)
        if self.rescale:
            x *= self.rescale
        if self.samplewise_center:
            x -= np.mean(x, keepdims=True)
        if self.samplewise_std_normalization:
            x /= np.std(x, keepdims=True) + 1e-6
        if self.featurewise_center and self._fitted(self.mean):
            x -= self.mean
        if self.featurewise_std_normalization and self._fitted(self.std):
            x /= self.std + 1e-6
        if self.zca_whitening and self._fitted(self.principal_components):
            x = np.reshape(x.reshape(-1, np.prod(x.shape[-3:])) @ self.principal_components, x.shape)
        return x

    @staticmethod
    def _fitted(statistic) -> bool:
        if statistic is None:
            warnings.warn("This ImageDataGenerator specifies featurewise normalization or whitening, but it hasn't "
                          "been fit on any training data. Fit it first by calling `.fit(numpy_data)`.")
        return statistic is not None

    def _random_shift(self, shift_range, size):
        if not shift_range:
            return 0
        try:   # a list or an int: one of its values, either sign
            shift = np.random.choice(shift_range)
            shift *= np.random.choice([-1, 1])
        except ValueError:   # a float
            shift = np.random.uniform(-shift_range, shift_range)
        if np.max(shift_range) < 1:
            shift *= size
        return shift

    def get_random_transform(self, img_shape, seed=None):
        """The random parameters of one transform of an image of shape `img_shape` (a dict of
        theta, tx, ty, shear, zx, zy, flip_horizontal, flip_vertical, channel_shift_intensity,
        brightness), drawn after np.random.seed(seed) when a seed is given."""
        if seed is not None:
            np.random.seed(seed)
        theta = np.random.uniform(-self.rotation_range, self.rotation_range) if self.rotation_range else 0
        tx = self._random_shift(self.height_shift_range, img_shape[self.row_axis - 1])
        ty = self._random_shift(self.width_shift_range, img_shape[self.col_axis - 1])
        shear = np.random.uniform(-self.shear_range, self.shear_range) if self.shear_range else 0
        if self.zoom_range[0] == 1 and self.zoom_range[1] == 1:
            zx, zy = 1, 1
        else:
            zx, zy = np.random.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        flip_horizontal = (np.random.random() < 0.5) * self.horizontal_flip
        flip_vertical = (np.random.random() < 0.5) * self.vertical_flip
        channel_shift_intensity = None
        if self.channel_shift_range != 0:
            channel_shift_intensity = np.random.uniform(-self.channel_shift_range, self.channel_shift_range)
        brightness = None
        if self.brightness_range is not None:
            brightness = np.random.uniform(self.brightness_range[0], self.brightness_range[1])
        return {"theta": theta, "tx": tx, "ty": ty, "shear": shear, "zx": zx, "zy": zy,
                "flip_horizontal": flip_horizontal, "flip_vertical": flip_vertical,
                "channel_shift_intensity": channel_shift_intensity, "brightness": brightness}

    def apply_transform(self, x, transform_parameters):
        """One image (rank 3) transformed with the parameters get_random_transform gives."""
        row, col, channel = self.row_axis - 1, self.col_axis - 1, self.channel_axis - 1
        p = transform_parameters
        x = apply_affine_transform(x, p.get("theta", 0), p.get("tx", 0), p.get("ty", 0), p.get("shear", 0),
                                   p.get("zx", 1), p.get("zy", 1), row_axis=row, col_axis=col, channel_axis=channel,
                                   fill_mode=self.fill_mode, cval=self.cval, order=self.interpolation_order)
        if p.get("channel_shift_intensity") is not None:
            x = apply_channel_shift(x, p["channel_shift_intensity"], channel)
        if p.get("flip_horizontal", False):
            x = flip_axis(x, col)
        if p.get("flip_vertical", False):
            x = flip_axis(x, row)
        if p.get("brightness") is not None:
            x = apply_brightness_shift(x, p["brightness"], False)
        return x

    def random_transform(self, x, seed=None):
        """One image (rank 3) with a random transform (seeded by `seed` when given)."""
        return self.apply_transform(x, self.get_random_transform(x.shape, seed))

    def fit(self, x, augment=False, rounds=1, seed=None):
        """Computes the featurewise mean, std and ZCA whitening matrix of the images `x` (rank 4),
        over `rounds` random transforms of them when `augment`."""
        x = np.asarray(x, dtype=self.dtype)
        if x.ndim != 4:
            raise ValueError(f"Input to `.fit()` should have rank 4. Got array with shape: {x.shape}")
        if seed is not None:
            np.random.seed(seed)
        x = np.copy(x)
        if self.rescale:
            x *= self.rescale
        if augment:
            ax = np.zeros((rounds * x.shape[0],) + x.shape[1:], dtype=self.dtype)
            for r in range(rounds):
                for i in range(x.shape[0]):
                    ax[i + r * x.shape[0]] = self.random_transform(x[i])
            x = ax
        broadcast_shape = [1, 1, 1]
        broadcast_shape[self.channel_axis - 1] = x.shape[self.channel_axis]
        if self.featurewise_center:
            self.mean = np.reshape(np.mean(x, axis=(0, self.row_axis, self.col_axis)), broadcast_shape)
            x -= self.mean
        if self.featurewise_std_normalization:
            self.std = np.reshape(np.std(x, axis=(0, self.row_axis, self.col_axis)), broadcast_shape)
            x /= self.std + 1e-6
        if self.zca_whitening:
            n = len(x)
            u, s, _ = np.linalg.svd(np.reshape(x, (n, -1)).T, full_matrices=False)
            s_inv = math.sqrt(n) / (s + self.zca_epsilon)   # a Python float keeps float32 images float32
            self.principal_components = (u * s_inv).dot(u.T)
