"""The runner's stages, one module each.

``data`` and ``model`` open both commands (``insdel run`` and ``insdel roar``); ``attribution``
is the one checkpointed per-method stage both use. The stages of one policy of an experiment
(``decomposition``, ``attribution``, ``curves``, ``metrics``, ``tables``) each expose
``run(p: PolicyRun)`` and are listed, in order, in :data:`insdel.runner.experiment.POLICY_STAGES`;
``figures`` runs once after every policy. A new stage is one module here and one line in that list.
"""
