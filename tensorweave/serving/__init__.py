"""Serving SavedModels: `tensorweave saved_model show/run` (TF's saved_model_cli) and
`tensorweave serve` (TensorFlow Serving's REST API).

servable.py loads one version of a model into a Session and runs its signatures; rest_api.py is
TF Serving's JSON (requests to tensors, tensors to responses, errors and status codes) with no
HTTP in it; model_versions.py keeps the versions of a model directory (new ones loaded as they
appear); model_server.py serves them over HTTP (aiohttp, the `serving` extra); saved_model_cli.py
prints and runs signatures as TF's saved_model_cli does.
"""
