"""tfmc from Python: load a translation model once, translate lists of
sentences or token ids, get encoder states as NumPy arrays.

    import tfmc
    t = tfmc.Translator("examples/zh-en/model.json")
    t.translate(["我们明天去公园吧。"], beam_size=4)   # ["Let's go to the park tomorrow."]

The work runs in C++ with the GIL released. See docs/api-python.md.
"""

from ._tfmc import Translator, __version__  # noqa: F401

__all__ = ["Translator", "__version__"]
