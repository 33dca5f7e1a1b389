"""Reports over stored runs: model comparison, regression audit, notebook drill-down.

Import from the submodules: ``compare.compare_runs``, ``audit.audit_runs`` / ``audit.AuditGates``,
``drilldown`` (notebook helpers) and ``stats`` (bootstrap intervals and tests). The package
itself imports nothing heavy, so ``import hallumeasure.report.audit`` never loads matplotlib.
"""
