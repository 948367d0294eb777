"""railgauge: measure, model, simulate and tune communication on cluster interconnects.

The Python package holds the science (model fits such as LogGP by PRTT), the reports and
the command line; the measurements themselves come from the native tools as JSON Lines.
"""

__version__ = "0.1.0"
