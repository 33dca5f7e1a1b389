"""The Python face of hallumeasure: ``measure`` / ``ameasure`` (a whole input into a run), ``check`` /
``acheck`` (one response, in memory), ``Run`` (a stored run: tables, rates with intervals, viewer,
comparison, audit), ``assert_grounded`` and the pytest plugin (``pytest_plugin``).

It sits above ``report`` and below ``cli``: it may use every stage, and nothing but the command line
may use it. ``hallumeasure/__init__.py`` re-exports its functions and types.
"""
