"""An MLServer runtime that runs an ONNX file with onnxruntime (CPU).

MLServer owns the KServe v2 gRPC endpoint and, when the model settings give
max_batch_size > 1, its adaptive batcher: requests that arrive within
max_batch_time of each other are concatenated along the first dimension and
predict() sees the batch. The ONNX file is `parameters.uri`; its inputs and
outputs are served under their graph names.
"""

import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse
from mlserver.utils import get_model_uri


class OnnxRuntimeModel(MLModel):
    async def load(self) -> bool:
        path = await get_model_uri(self._settings)
        extra = (self._settings.parameters.extra or {}) if self._settings.parameters else {}
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(extra.get("intra_op_threads", 2))
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self._output_names = [o.name for o in self._session.get_outputs()]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        feeds = {i.name: np.ascontiguousarray(NumpyCodec.decode_input(i)) for i in payload.inputs}
        results = self._session.run(self._output_names, feeds)
        return InferenceResponse(
            model_name=self.name,
            outputs=[NumpyCodec.encode_output(name, value)
                     for name, value in zip(self._output_names, results)])
