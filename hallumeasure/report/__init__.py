"""Reports over stored runs: model comparison, regression audit, notebook drill-down.

Import from the submodules: ``compare.compare_runs``, ``audit.audit_runs`` / ``audit.AuditGates``,
``power`` (sample-size planning), ``calibrate.calibrate`` / ``calibrate.export_sample`` (the judge
against human labels), ``drilldown`` (notebook helpers), ``stats`` (bootstrap intervals and tests),
``intervals`` (closed-form intervals) and ``correction`` (PPI, Rogan-Gladen, kappa). The package
itself imports nothing heavy, so ``import hallumeasure.report.audit`` never loads matplotlib.
"""
