"""Statistics, as plain numbers: the one bootstrap, intervals, tests, power, PPI correction, audit bounds.

Below ``report`` and ``bench`` in the layers and above ``core`` only, so both can use one procedure
and neither renders anything here. Importing the package loads nothing: ``stats.resampling`` (the
defaults of every interval) is read by the command line's help without numpy.
"""
