# Run by ctest as the onnx_conformance test when the data directory was missing
# at configure time: fail and say where the data was expected.
message(FATAL_ERROR
  "onnx_conformance: no ONNX conformance data at '${DATA_DIR}' (expected "
  "light/, simple/, pytorch-converted/, pytorch-operator/ there); put the data "
  "there and re-run cmake")
