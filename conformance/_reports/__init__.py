"""Reports written from a run or from JSON reports: JSON and JUnit (``json_junit``), HTML
(``html``), Markdown summary, badge and diff (``summaries``).
"""
