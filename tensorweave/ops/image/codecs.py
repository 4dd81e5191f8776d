"""Image codecs: decode_png / jpeg / gif / bmp / image and encode_png / jpeg, extract_jpeg_shape,
decode_and_crop_jpeg, adjust_jpeg_quality / random_jpeg_quality (EncodeJpegVariableQuality),
through Pillow (the optional `image` extra). Data that is not the format asked for is
InvalidArgumentError naming the op; without Pillow the kernels say how to install it."""
from __future__ import annotations

import io

import numpy as np

from tensorweave.framework import dtypes, errors
from tensorweave.framework.api import name_scope
from tensorweave.framework.shapes import TensorShape, unknown_shape
from tensorweave.framework.tensor_conversion import convert_to_tensor
from tensorweave.framework.tf_export import tf_export
from tensorweave.ops.helpers import as_string_tensor, check_output_size, invalid, make_op, string_array
from tensorweave.ops.image.color import convert_image_dtype
from tensorweave.ops.random import random_uniform
from tensorweave.ops.registry import register

# Pillow's modules, imported when the first image kernel is built (_need_pillow): not at the op
# library's load, which every process of a job pays at start-up
Image = ImageSequence = None


_MAGIC = ((b"\xff\xd8\xff", "JPEG"), (b"\x89PNG", "PNG"), (b"GIF8", "GIF"), (b"BM", "BMP"))


def _need_pillow(node) -> None:
    global Image, ImageSequence
    if Image is None:
        try:   # Pillow is optional: pip install 'tensorweave[image]'
            from PIL import Image, ImageSequence
        except ImportError:  # pragma: no cover - exercised only without the extra
            raise errors.UnimplementedError(node, node.name,
                                            f"{node.op} needs Pillow: pip install 'tensorweave[image]'") from None


def _sniff(data: bytes):
    for magic, fmt in _MAGIC:
        if data.startswith(magic):
            return fmt
    return None


def _open(node, data: bytes, fmt: str):
    """A Pillow image of `data`, which must be `fmt` ('PNG', 'JPEG', ...)."""
    if _sniff(data) != fmt:
        raise invalid(node, f"Invalid {fmt} data, size {len(data)}" + (" or crop window" if fmt == "JPEG" else ""))
    try:
        img = Image.open(io.BytesIO(data))
        # the size the header declares, refused before the pixels are decoded into it
        check_output_size(node, [img.size[1], img.size[0], len(img.getbands())])
        if fmt != "JPEG":   # JPEGs load after draft() has chosen their mode and scale
            img.load()
        return img
    except errors.ResourceExhaustedError:
        raise
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds for damaged data
        raise invalid(node, f"Invalid {fmt} data, size {len(data)}: {e}") from None


def _gray(rgb: np.ndarray) -> np.ndarray:
    """libpng's RGB to gray as TensorFlow asks for it: (9798 R + 19235 G + 3735 B) >> 15, a gray
    pixel (R == G == B) kept as it is."""
    big = rgb.astype(np.int64)
    y = (9798 * big[..., 0] + 19235 * big[..., 1] + 3735 * big[..., 2]) >> 15
    same = (big[..., 0] == big[..., 1]) & (big[..., 1] == big[..., 2])
    return np.where(same, big[..., 0], y).astype(rgb.dtype)[..., None]


def _channels(arr: np.ndarray, channels: int) -> np.ndarray:
    """An [h, w, c] array with `channels` channels (0 keeps them), as libpng's transforms do."""
    c = arr.shape[-1]
    if channels in (0, c):
        return arr
    full = np.iinfo(arr.dtype).max
    color, alpha = arr[..., :3] if c >= 3 else np.repeat(arr[..., :1], 3, -1), arr[..., -1:] if c in (2, 4) else None
    if channels == 1:
        return _gray(color) if c >= 3 else arr[..., :1]
    if channels == 2:
        return np.concatenate([_gray(color) if c >= 3 else arr[..., :1],
                               alpha if alpha is not None else np.full(arr.shape[:-1] + (1,), full, arr.dtype)], -1)
    if channels == 3:
        return color
    return np.concatenate([color, alpha if alpha is not None else np.full(arr.shape[:-1] + (1,), full, arr.dtype)], -1)


def _array(img) -> np.ndarray:
    """A Pillow image as [h, w, c] (palette images expanded, 16-bit kept)."""
    if img.mode == "P":
        img = img.convert("RGBA" if "transparency" in img.info else "RGB")
    elif img.mode == "1":
        img = img.convert("L")
    elif img.mode in ("I;16", "I;16B", "I"):
        return np.asarray(img, dtype=np.uint16)[..., None] if img.mode != "I" else \
            np.asarray(img).astype(np.uint16)[..., None]
    elif img.mode not in ("L", "LA", "RGB", "RGBA"):
        img = img.convert("RGB")
    arr = np.asarray(img)
    return arr[..., None] if arr.ndim == 2 else arr


def _png(node, data: bytes, channels: int, dt) -> np.ndarray:
    arr = _channels(_array(_open(node, data, "PNG")), channels)
    if dt == np.uint16 and arr.dtype == np.uint8:
        return arr.astype(np.uint16) * 257
    if dt == np.uint8 and arr.dtype == np.uint16:
        return (arr >> 8).astype(np.uint8)
    return arr


def _jpeg(node, data: bytes, channels: int, ratio: int = 1) -> np.ndarray:
    img = _open(node, data, "JPEG")
    mode = "L" if channels == 1 else "RGB" if channels == 3 else None
    try:
        if mode or ratio > 1:
            img.draft(mode or img.mode, (max(img.size[0] // ratio, 1), max(img.size[1] // ratio, 1)))
        img.load()
    except Exception as e:  # noqa: BLE001
        raise invalid(node, f"Invalid JPEG data or crop window, data size {len(data)}: {e}") from None
    return _channels(_array(img), channels)


def _gif(node, data: bytes) -> np.ndarray:
    img = _open(node, data, "GIF")
    return np.stack([np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(img)])


def _bmp(node, data: bytes, channels: int) -> np.ndarray:
    return _channels(_array(_open(node, data, "BMP")), channels)


def _webp(node, data: bytes, channels: int) -> np.ndarray:
    """[frames, h, w, 3 or 4] of a WebP (4 channels when it has alpha): TF's DecodeWebP."""
    try:
        if not (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
            raise ValueError("no RIFF WEBP signature")
        img = Image.open(io.BytesIO(data))
    except Exception as e:  # noqa: BLE001 - Pillow's UnidentifiedImageError and the like
        raise invalid(node, f"Failed to decode WebP header. ({e})") from None
    try:
        check_output_size(node, [getattr(img, "n_frames", 1), img.size[1], img.size[0], 4])
        mode = "RGBA" if img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info else "RGB"
        frames = np.stack([np.asarray(f.convert(mode)) for f in ImageSequence.Iterator(img)])
    except errors.ResourceExhaustedError:
        raise
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds for damaged data
        raise invalid(node, f"Failed to decode WebP image, size {len(data)}: {e}") from None
    if channels not in (0, frames.shape[-1]):
        raise invalid(node, "Number of channels requested does not match input")
    return frames


def _webp_kernel(node, ctx):
    _need_pillow(node)
    channels = node.attr["channels"]
    return lambda contents: _webp(node, _scalar(node, contents), channels)


def _scalar(node, contents) -> bytes:
    arr = string_array(contents)
    if arr.ndim != 0:
        raise invalid(node, f"contents must be scalar, got shape {list(arr.shape)}")
    return bytes(arr[()])


def _decoder(fn):
    def factory(node, ctx):
        _need_pillow(node)
        return lambda contents: fn(node, _scalar(node, contents))
    return factory


def _png_kernel(node, ctx):
    _need_pillow(node)
    channels, dt = node.attr["channels"], dtypes.as_dtype(node.attr["dtype"]).as_numpy_dtype
    return lambda contents: _png(node, _scalar(node, contents), channels, dt)


def _jpeg_kernel(node, ctx):
    _need_pillow(node)
    channels, ratio = node.attr["channels"], node.attr["ratio"]
    return lambda contents: _jpeg(node, _scalar(node, contents), channels, ratio)


def _bmp_kernel(node, ctx):
    _need_pillow(node)
    channels = node.attr["channels"]
    return lambda contents: _bmp(node, _scalar(node, contents), channels)


def _hwc(op, dtype=dtypes.uint8):
    return [(dtype, TensorShape([None, None, op.get_attr("channels") or None]))]


register("DecodePng", lambda op: _hwc(op, op.get_attr("dtype")), _png_kernel, grad=None, dtypes=(dtypes.string,),
         dtype_param="contents")
register("DecodeJpeg", _hwc, _jpeg_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="contents")
register("DecodeBmp", _hwc, _bmp_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="contents")
register("DecodeWebP", lambda op: [(dtypes.uint8, TensorShape([None, None, None, op.get_attr("channels") or None]))],
         _webp_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="contents")
register("DecodeGif", lambda op: [(dtypes.uint8, TensorShape([None, None, None, 3]))], _decoder(_gif), grad=None,
         dtypes=(dtypes.string,), dtype_param="contents")


def _decode_image_kernel(node, ctx):
    _need_pillow(node)
    channels, expand = node.attr["channels"], node.attr["expand_animations"]

    def run(contents):
        data = _scalar(node, contents)
        fmt = _sniff(data)
        if fmt == "JPEG":
            return _jpeg(node, data, channels)
        if fmt == "PNG":
            return _png(node, data, channels, np.uint8)
        if fmt == "BMP":
            return _bmp(node, data, channels)
        if fmt == "GIF":
            if channels not in (0, 3):
                raise invalid(node, f"channels must be 0 or 3 for GIF, got {channels}")
            frames = _gif(node, data)
            return frames if expand else frames[0]
        raise invalid(node, "Unknown image file format. One of JPEG, PNG, GIF, BMP required.")
    return run


register("DecodeImage", lambda op: [(dtypes.uint8, unknown_shape())], _decode_image_kernel, grad=None,
         dtypes=(dtypes.string,), dtype_param="contents")


def _check_channels(channels, allowed) -> int:
    channels = int(channels or 0)
    if channels not in allowed:
        raise ValueError(f"channels must be one of {allowed}, got {channels}")
    return channels


@tf_export("image.decode_png", "io.decode_png")
def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """tf.image.decode_png(contents, channels=0, dtype=tf.uint8, name=None): a PNG as
    [height, width, channels] (0: as stored; 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA)."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"dtype must be uint8 or uint16, got {dtype.name}")
    attrs = {"channels": _check_channels(channels, (0, 1, 2, 3, 4)), "dtype": dtype}
    return make_op("DecodePng", [as_string_tensor(contents)], attrs, name=name or "DecodePng").outputs[0]


@tf_export("image.decode_jpeg", "io.decode_jpeg")
def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    """tf.image.decode_jpeg(contents, channels=0, ratio=1, ...): a JPEG as uint8 [height, width,
    channels] (0: as stored, 1 gray, 3 RGB), downscaled by `ratio` (1, 2, 4 or 8)."""
    if ratio not in (1, 2, 4, 8):
        raise ValueError(f"ratio must be 1, 2, 4, or 8, got {ratio}")
    attrs = {"channels": _check_channels(channels, (0, 1, 3)), "ratio": int(ratio),
             "fancy_upscaling": bool(fancy_upscaling), "try_recover_truncated": bool(try_recover_truncated),
             "acceptable_fraction": float(acceptable_fraction), "dct_method": dct_method}
    return make_op("DecodeJpeg", [as_string_tensor(contents)], attrs, name=name or "DecodeJpeg").outputs[0]


@tf_export("image.decode_gif", "io.decode_gif")
def decode_gif(contents, name=None):
    """tf.image.decode_gif(contents, name=None): the frames of a GIF, uint8 [frames, h, w, 3]."""
    return make_op("DecodeGif", [as_string_tensor(contents)], name=name or "DecodeGif").outputs[0]


@tf_export("io.decode_webp", "image.decode_webp")
def decode_webp(contents, channels=0, dtype=dtypes.uint8, name=None):
    """tf.io.decode_webp(contents, channels=0, dtype=tf.uint8, name=None): a WebP image's frames
    as uint8 [frames, h, w, channels] (one frame for a still image); channels 0 keeps the image's
    own (3, or 4 with alpha), and 3 or 4 must match it (InvalidArgumentError otherwise)."""
    if channels not in (0, 3, 4):
        raise ValueError(f"decode_webp: WebP only supports 3 or 4 channels, got {channels}")
    if dtypes.as_dtype(dtype) != dtypes.uint8:
        raise ValueError(f"decode_webp: dtype must be uint8, got {dtypes.as_dtype(dtype).name}")
    return make_op("DecodeWebP", [as_string_tensor(contents)], {"channels": int(channels), "dtype": dtypes.uint8},
                   name=name or "DecodeWebP").outputs[0]


@tf_export("image.decode_bmp", "io.decode_bmp")
def decode_bmp(contents, channels=0, name=None):
    """tf.image.decode_bmp(contents, channels=0, name=None): a BMP as uint8 [h, w, channels]."""
    attrs = {"channels": _check_channels(channels, (0, 3, 4))}
    return make_op("DecodeBmp", [as_string_tensor(contents)], attrs, name=name or "DecodeBmp").outputs[0]


@tf_export("image.decode_image", "io.decode_image")
def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None, expand_animations=True):
    """tf.image.decode_image(contents, channels=None, dtype=tf.uint8, name=None,
    expand_animations=True): a BMP, GIF, JPEG or PNG by its first bytes (GIFs as
    [frames, h, w, 3] when expand_animations); converted to `dtype` by convert_image_dtype."""
    with name_scope(name, "decode_image"):
        attrs = {"channels": _check_channels(channels, (0, 1, 2, 3, 4)), "expand_animations": bool(expand_animations)}
        out = make_op("DecodeImage", [as_string_tensor(contents)], attrs, name="DecodeImage").outputs[0]
        return out if dtypes.as_dtype(dtype) == dtypes.uint8 else convert_image_dtype(out, dtype)


# -- encoders ------------------------------------------------------------------------------------------
def _image3(node, image) -> np.ndarray:
    x = np.asarray(image)
    if x.ndim != 3 or x.shape[2] not in (1, 2, 3, 4):
        raise invalid(node, f"image must be 3-dimensional with 1 to 4 channels, got shape {list(x.shape)}")
    return x


def _pil(x: np.ndarray):
    if x.dtype == np.uint16:
        if x.shape[2] != 1:
            raise ValueError("16-bit PNGs are written with one channel here")
        return Image.fromarray(x[..., 0].astype(np.uint16), mode="I;16")
    return Image.fromarray(x[..., 0] if x.shape[2] == 1 else x, mode={1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[x.shape[2]])


def _encode_png_kernel(node, ctx):
    _need_pillow(node)
    level = node.attr["compression"]

    def run(image):
        buf = io.BytesIO()
        try:
            _pil(_image3(node, image)).save(buf, format="PNG", compress_level=6 if level < 0 else min(level, 9))
        except ValueError as e:
            raise invalid(node, str(e)) from None
        return buf.getvalue()
    return run


def _encode_jpeg_kernel(node, ctx):
    _need_pillow(node)
    a = node.attr

    def run(image, quality=None):
        x = _image3(node, image)
        if a["format"] == "grayscale":
            x = x[..., :1]
        elif a["format"] == "rgb":
            x = np.repeat(x, 3, -1) if x.shape[2] == 1 else x
        if x.shape[2] not in (1, 3):
            raise invalid(node, f"image must have 1 or 3 channels, got {x.shape[2]}")
        buf = io.BytesIO()
        dpi = (a["x_density"], a["y_density"]) if a["density_unit"] == "in" else None
        _pil(x).save(buf, format="JPEG", quality=a["quality"] if quality is None else quality,
                     progressive=a["progressive"],
                     optimize=a["optimize_size"], subsampling=2 if a["chroma_downsampling"] else 0,
                     **({"dpi": dpi} if dpi else {}))
        return buf.getvalue()
    return run


register("EncodePng", lambda op: [(dtypes.string, TensorShape([]))], _encode_png_kernel, grad=None,
         dtypes=(dtypes.uint8, dtypes.uint16), dtype_param="image")
register("EncodeJpeg", lambda op: [(dtypes.string, TensorShape([]))], _encode_jpeg_kernel, grad=None,
         dtypes=(dtypes.uint8,), dtype_param="image")


@tf_export("image.encode_png", "io.encode_png")
def encode_png(image, compression=-1, name=None):
    """tf.image.encode_png(image, compression=-1, name=None): a uint8 or uint16 [h, w, c] image
    (c from 1 to 4) as PNG bytes; compression 0-9, -1 the default."""
    image = convert_to_tensor(image, name="image")
    return make_op("EncodePng", [image], {"compression": int(compression)}, name=name or "EncodePng").outputs[0]


@tf_export("image.encode_jpeg", "io.encode_jpeg")
def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300, xmp_metadata="",
                name=None):
    """tf.image.encode_jpeg(image, format='', quality=95, ...): a uint8 [h, w, 1 or 3] image as
    JPEG bytes ('grayscale' / 'rgb' force the channels)."""
    if format not in ("", "grayscale", "rgb"):
        raise ValueError(f"format must be '', 'grayscale' or 'rgb', got {format!r}")
    if not 0 <= quality <= 100:
        raise ValueError(f"quality must be in [0, 100], got {quality}")
    attrs = {"format": format, "quality": int(quality), "progressive": bool(progressive),
             "optimize_size": bool(optimize_size), "chroma_downsampling": bool(chroma_downsampling),
             "density_unit": density_unit, "x_density": int(x_density), "y_density": int(y_density),
             "xmp_metadata": xmp_metadata}
    image = convert_to_tensor(image, name="image")
    return make_op("EncodeJpeg", [image], attrs, name=name or "EncodeJpeg").outputs[0]


# -- JPEG shape, crops and quality -------------------------------------------------------------------------
def _jpeg_shape_kernel(node, ctx):
    _need_pillow(node)
    dt = dtypes.as_dtype(node.attr["output_type"]).as_numpy_dtype

    def run(contents):
        img = _open(node, _scalar(node, contents), "JPEG")
        return np.array([img.size[1], img.size[0], len(img.getbands())], dt)
    return run


def _decode_and_crop_kernel(node, ctx):
    _need_pillow(node)
    channels, ratio = node.attr["channels"], node.attr["ratio"]

    def run(contents, crop_window):
        window = np.reshape(crop_window, -1)
        if window.shape != (4,):
            raise invalid(node, f"crop_window must be shape [4], got {list(np.shape(crop_window))}")
        data = _scalar(node, contents)
        image = _jpeg(node, data, channels, ratio)
        y, x, h, w = (int(v) for v in window)
        if min(y, x) < 0 or h <= 0 or w <= 0 or y + h > image.shape[0] or x + w > image.shape[1]:
            raise invalid(node, f"Invalid JPEG data or crop window, data size {len(data)}: crop window "
                                f"{window.tolist()} is outside the image of {image.shape[0]}x{image.shape[1]}")
        return image[y:y + h, x:x + w]
    return run


def _variable_quality_kernel(node, ctx):
    encode = _encode_jpeg_kernel(node, ctx)   # TF's defaults for the other attributes

    def run(images, quality):
        q = int(np.reshape(quality, -1)[0]) if np.size(quality) == 1 else None
        if q is None or not 0 <= q <= 100:
            raise invalid(node, f"quality must be a scalar in [0, 100], got {np.asarray(quality).tolist()}")
        return encode(images, quality=q)
    return run


register("ExtractJpegShape", lambda op: [(dtypes.as_dtype(op.get_attr("output_type")), TensorShape([3]))],
         _jpeg_shape_kernel, grad=None, dtypes=(dtypes.string,), dtype_param="contents")
register("DecodeAndCropJpeg", _hwc, _decode_and_crop_kernel, grad=None,
         dtypes={0: ("contents", (dtypes.string,)), 1: ("crop_window", (dtypes.int32,))})
register("EncodeJpegVariableQuality", lambda op: [(dtypes.string, TensorShape([]))], _variable_quality_kernel,
         grad=None, dtypes={0: ("images", (dtypes.uint8,)), 1: ("quality", (dtypes.int32,))})


@tf_export("image.extract_jpeg_shape", "io.extract_jpeg_shape")
def extract_jpeg_shape(contents, output_type=dtypes.int32, name=None):
    """tf.image.extract_jpeg_shape(contents, output_type=tf.int32, name=None): [height, width,
    channels] of a JPEG, read from its header without decoding the pixels."""
    attrs = {"output_type": dtypes.as_dtype(output_type)}
    return make_op("ExtractJpegShape", [as_string_tensor(contents)], attrs, name=name or "ExtractJpegShape").outputs[0]


@tf_export("image.decode_and_crop_jpeg", "io.decode_and_crop_jpeg")
def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """tf.image.decode_and_crop_jpeg(contents, crop_window, channels=0, ...): decode_jpeg's
    image cropped to crop_window [y, x, height, width]; a window outside the image is
    InvalidArgumentError."""
    if ratio not in (1, 2, 4, 8):
        raise ValueError(f"ratio must be 1, 2, 4, or 8, got {ratio}")
    attrs = {"channels": _check_channels(channels, (0, 1, 3)), "ratio": int(ratio),
             "fancy_upscaling": bool(fancy_upscaling), "try_recover_truncated": bool(try_recover_truncated),
             "acceptable_fraction": float(acceptable_fraction), "dct_method": dct_method}
    inputs = [as_string_tensor(contents), convert_to_tensor(crop_window, dtypes.int32, name="crop_window")]
    return make_op("DecodeAndCropJpeg", inputs, attrs, name=name or "DecodeAndCropJpeg").outputs[0]


@tf_export("image.adjust_jpeg_quality")
def adjust_jpeg_quality(image, jpeg_quality, name=None):
    """tf.image.adjust_jpeg_quality(image, jpeg_quality, name=None): the image encoded as a JPEG
    of quality jpeg_quality (0-100, an int or int32 tensor) and decoded again, in its dtype."""
    with name_scope(name, "adjust_jpeg_quality", [image]):
        image = convert_to_tensor(image, name="image")
        as_uint8 = convert_image_dtype(image, dtypes.uint8)
        attrs = {"format": "", "quality": 95, "progressive": False, "optimize_size": False,
                 "chroma_downsampling": True, "density_unit": "in", "x_density": 300, "y_density": 300,
                 "xmp_metadata": ""}
        quality = convert_to_tensor(jpeg_quality, dtypes.int32, name="jpeg_quality")
        encoded = make_op("EncodeJpegVariableQuality", [as_uint8, quality], attrs,
                          name="EncodeJpegVariableQuality").outputs[0]
        return convert_image_dtype(decode_jpeg(encoded), image.dtype)


@tf_export("image.random_jpeg_quality")
def random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    """tf.image.random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    adjust_jpeg_quality with a quality drawn uniformly from [min, max) at each run."""
    if not (0 <= min_jpeg_quality <= 100 and 0 <= max_jpeg_quality <= 100):
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")
    quality = random_uniform([], min_jpeg_quality, max_jpeg_quality, seed=seed, dtype=dtypes.int32)
    return adjust_jpeg_quality(image, quality)
