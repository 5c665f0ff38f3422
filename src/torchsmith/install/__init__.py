"""`torchsmith install`: carry out a plan into an environment, transactionally.

indexes.py reads where packages come from; steps.py decides the exact commands (pure);
envstate.py and snapshot.py read and restore the environment's package set; checks.py judges
what landed; executor.py is the only part that changes the machine.
"""
