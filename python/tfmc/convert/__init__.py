"""Converters from other toolkits' checkpoints to tfmc model directories
(docs/model-format.md):

    python3 -m tfmc.convert pytorch CKPT.pt -o DIR --layout ...   (docs/import-pytorch.md)
    python3 -m tfmc.convert marian  ...                           an OPUS-MT / Marian model
    python3 -m tfmc.convert fairseq ...                           a fairseq transformer

`tfmc-convert` (installed into bin/) is the same command. Each subcommand is
the module tfmc.convert.<name> with add_arguments(parser) and run(args);
tfmc.convert.common holds what they share. Errors are one line
`error: ...` on stderr, exit status 1. No converter runs code from the files
it reads.
"""
