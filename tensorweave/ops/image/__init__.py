"""Image ops (tf.image): images are [height, width, channels] or batches [batch, h, w, c].

color.py     convert_image_dtype, brightness/contrast/saturation/hue/gamma, standardization, HSV, gray
geometry.py  flips and random flips, rot90, transpose, crops and pads
resize.py    ResizeBilinear / NearestNeighbor / Bicubic / Area and resize_images
boxes.py     sample_distorted_bounding_box, draw_bounding_boxes
codecs.py    decode/encode PNG, JPEG, GIF, BMP through Pillow (optional extra `image`)
"""
