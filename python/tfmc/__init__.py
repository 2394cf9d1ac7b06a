"""tfmc from Python: load a translation model once, translate lists of
sentences or token ids, get encoder states as NumPy arrays.

    import tfmc
    t = tfmc.Translator("examples/zh-en/model.json")
    t.translate(["我们明天去公园吧。"], beam_size=4)   # ["Let's go to the park tomorrow."]

The work runs in C++ with the GIL released. See docs/api-python.md.

The compiled module `_tfmc` is imported on first use of `Translator` or
`__version__`, so the pure-Python parts (`tfmc.reference`, the converters of
`python3 -m tfmc.convert`) also run from a source tree without it.
"""

__all__ = ["Translator", "OptionError", "__version__"]


def __getattr__(name):
    if name in __all__:
        from . import _tfmc
        return getattr(_tfmc, name)
    raise AttributeError(f"module 'tfmc' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
