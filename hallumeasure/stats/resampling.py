"""The one interval procedure of every report, as plain numbers: importing it loads no numpy or pandas, so the
command line can show these defaults in its help without loading the statistics (``stats.bootstrap``)."""

#: The one interval procedure of every report (measure, show, view, compare, audit): this many
#: bootstrap resamples from this seed at this confidence, so one run always gets one interval.
RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95
