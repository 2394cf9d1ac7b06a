"""The PyTorch reference ("oracle") for tfmc, in plain float32 PyTorch.

    tfmc.reference.tfm    runs a tfmc model directory (docs/model-format.md):
                          forward, greedy and beam search, tokenizers,
                          export / load, the safetensors reader and writer
    tfmc.reference.seeds  modules with the tutorial seeds' parameter names

Used by the tests, the fixtures and the converters (tfmc.convert) to check
what they write. See docs/reference.md.
"""
