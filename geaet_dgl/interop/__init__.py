"""The PyG reference (icm1018/GEAET, on GraphGPS / graphgym) as a user's run needs it: its files read, never its code.

- :mod:`.reference_yaml`: the reference's YAML configuration files read into our dataclasses
  (``train --config``); its ``REFERENCE_PRESETS`` is the one table of our presets -> the reference's
  configuration files.
- :mod:`.reference_checkpoint`: turn the reference's ``ckpt/<epoch>.ckpt`` into our run directory
  (``import-reference``, ``train --config`` with ``pretrained.dir``) and back (``export_reference``);
  the tensors in :mod:`.reference_weights`, the parameter names in :mod:`.reference_names`.

Everything here reads plain YAML and plain ``torch.save`` data. Comparing with the reference (its network
built in this process, our graphs as PyG's files, its ``main.py`` run side by side) is the lab's:
:mod:`geaet_lab.interop`.
"""
