"""The one error type users see: a problem and the fix, printed as a single line."""


class UsageError(Exception):
    """Bad input from the user. str() is one line that names the problem and the fix."""

    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix
