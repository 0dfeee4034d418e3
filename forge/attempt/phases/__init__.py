"""An attempt as a pipeline of phases: workspace → solve → capture → score → flakes → record.

Each phase is a function of the phases before it (their frozen results and the attempt's
`Context`) and returns a frozen result; `assemble.attempt_record` builds the record once, from
those results. `forge.attempt.run` runs the pipeline and owns what a cancelled attempt must undo.
"""
