# The Python-backend model of Triton's quick-start repository layout. This
# server does not run Python models; it is here so that the repository has
# the same eight models and the refusal can be seen.
class TritonPythonModel:
    def execute(self, requests):
        raise NotImplementedError("Coalesce does not run Python models")
