"""Exports of a measured model to the simulators and tools people already run: SimGrid SMPI
(simgrid.py), LogGOPSim / ATLAHS (loggopsim.py) and Netgauge's ``loggp`` table for CODES and
Netgauge's scripts (netgauge.py). common.py reads the source (a gauge report folder, a
``model-loggp.json`` or a ``measurements.jsonl``) and infers the eager/rendezvous switch;
files.py writes an export's files so that a failure leaves nothing half-written."""
