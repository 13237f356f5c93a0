#include "engine/cuda/cuda_gemm.h"

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coalesce {
namespace {

// The epilogue cuBLASLt applies for `act` with or without a bias; `fused`
// is false when the activation must run as its own kernel afterwards.
// cuBLASLt's GELU is the tanh form; it stands for the erf form (what
// exporters write) only into a 16-bit result (`half_c`): the two differ
// by at most 4.8e-4 (at x = 2.70, y = 2.69), under half a float16 step
// there (9.8e-4; a bfloat16 step is 8x coarser), and less elsewhere.
cublasLtEpilogue_t EpilogueOf(DeviceActivation act, bool bias, bool half_c,
                              bool* fused) {
  *fused = true;
  if (act == DeviceActivation::kGeluErf && half_c) {
    return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  }
  switch (act) {
    case DeviceActivation::kIdentity:
      return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case DeviceActivation::kRelu:
      return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case DeviceActivation::kGeluTanh:
      return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default:
      *fused = false;
      return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

cudaDataType_t CudaType(DeviceFloat type) {
  switch (type) {
    case DeviceFloat::kHalf:
      return CUDA_R_16F;
    case DeviceFloat::kBFloat16:
      return CUDA_R_16BF;
    case DeviceFloat::kFloat:
      break;
  }
  return CUDA_R_32F;
}

// The largest power of two up to 256 dividing every address in `ptrs`
// and every byte stride in `strides` (0 strides ignored): the alignment
// cuBLASLt may assume for every matrix of a batch. Without telling it, its
// heuristic assumes 256-byte alignment and may pick a kernel that fails on
// less (a view or a batch matrix at an odd offset).
uint32_t Alignment(std::initializer_list<const void*> ptrs,
                   std::initializer_list<int64_t> strides) {
  uint64_t bits = 256;
  for (const void* p : ptrs) bits |= reinterpret_cast<uintptr_t>(p);
  for (int64_t s : strides) bits |= static_cast<uint64_t>(s);
  return static_cast<uint32_t>(bits & (~bits + 1));  // lowest set bit
}

// The key of args' GEMM; `*fused` as EpilogueOf says.
GemmKey KeyOf(const GemmArgs& args, bool* fused) {
  const bool half = args.a_half != nullptr;
  const int64_t h = half ? sizeof(Half) : sizeof(float);  // of A and B
  const int64_t c = DeviceFloatBytes(args.c.type);
  const void* a = half ? static_cast<const void*>(args.a_half) : args.a;
  const void* b = half ? static_cast<const void*>(args.b_half) : args.b;
  return GemmKey{
      args.m,
      args.n,
      args.k,
      args.batch,
      args.stride_a,
      args.stride_b,
      args.stride_c,
      args.trans_a,
      args.trans_b,
      EpilogueOf(args.activation.kind, args.bias.data != nullptr,
                 args.c.is_16bit(), fused),
      Alignment({a, b, args.c.data, args.z.data},
                {args.stride_a * h, args.stride_b * h, args.stride_c * c}),
      half ? args.half_type : DeviceFloat::kFloat,
      args.c.type};
}

}  // namespace

absl::Status CheckGemmOperands(const GemmArgs& args) {
  const bool half = args.a_half != nullptr;
  if (half != (args.b_half != nullptr)) {
    return absl::InvalidArgumentError(
        "Gemm: a_half and b_half must be set together");
  }
  if (half && args.half_type == DeviceFloat::kFloat) {
    return absl::InvalidArgumentError("Gemm: half_type is not 16-bit");
  }
  if (args.c.is_16bit() && (!half || args.c.type != args.half_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gemm: a ", DeviceFloatName(args.c.type),
                     " c needs operands of its type (a_half, b_half)"));
  }
  if (args.bias.data != nullptr && args.bias.type != args.c.type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Gemm: the bias is ", DeviceFloatName(args.bias.type), ", c is ",
        DeviceFloatName(args.c.type), "; the bias must have c's type"));
  }
  if (args.z.data != nullptr && args.z.type != args.c.type) {
    return absl::InvalidArgumentError(
        "Gemm: the residual z must have c's type");
  }
  return absl::OkStatus();
}

// A GEMM's cuBLASLt descriptors and chosen algorithm, destroyed with it.
class PreparedGemm {
 public:
  PreparedGemm(const CublasLt& lt, size_t workspace_bytes)
      : lt_(lt),
        workspace_bytes_(workspace_bytes),
        desc_(lt),
        x_(lt),
        y_(lt),
        d_(lt) {}

  absl::Status Init(cublasLtHandle_t handle, const GemmKey& key, bool tf32);
  absl::Status Run(cublasLtHandle_t handle, const GemmArgs& args,
                   void* workspace, cudaStream_t stream) const;

 private:
  absl::Status InitDesc(const GemmKey& key, bool tf32);
  absl::Status InitLayouts(const GemmKey& key);
  absl::Status Layout(LtMatrixLayout& layout, cudaDataType_t type,
                      uint64_t rows, uint64_t cols, int64_t ld, int64_t batch,
                      int64_t stride);
  absl::Status ChooseAlgo(cublasLtHandle_t handle, const GemmKey& key);

  const CublasLt& lt_;
  const size_t workspace_bytes_;
  LtMatmulDesc desc_;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS's
  // first operand x is B's memory, the second y is A's.
  LtMatrixLayout x_, y_, d_;
  cublasLtMatmulAlgo_t algo_{};
};

absl::Status PreparedGemm::Init(cublasLtHandle_t handle, const GemmKey& key,
                                bool tf32) {
  if (absl::Status s = InitDesc(key, tf32); !s.ok()) return s;
  if (absl::Status s = InitLayouts(key); !s.ok()) return s;
  return ChooseAlgo(handle, key);
}

absl::Status PreparedGemm::InitDesc(const GemmKey& key, bool tf32) {
  // float16 (bfloat16) A and B with float32 or float16 (bfloat16) C and D,
  // accumulating in
  // float32 with float32 alpha and beta (scale type CUDA_R_32F), are
  // combinations cublasLtMatmul supports for CUBLAS_COMPUTE_32F (NVIDIA's
  // LtHSHgemmStridedBatchSimple sample runs the float16 C one). The bias
  // epilogues read the bias as CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE says,
  // left at its default (-1): "the same type as the elements of output
  // matrix (Dtype)" (cublasLt.h) outside IMMA and FP8 kernels. So float32
  // with a float32 D and float16 with a float16 D, as GemmArgs' bias is
  // (CheckGemmOperands).
  absl::Status s = CublasStatus(
      lt_,
      lt_.MatmulDescCreate(desc_.receive(),
                           tf32 && !key.half() ? CUBLAS_COMPUTE_32F_FAST_TF32
                                               : CUBLAS_COMPUTE_32F,
                           CUDA_R_32F),
      "cublasLtMatmulDescCreate");
  if (!s.ok()) return s;
  const cublasOperation_t op_x = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_y = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  for (const auto& [attr, value] :
       {std::pair{CUBLASLT_MATMUL_DESC_TRANSA, op_x},
        std::pair{CUBLASLT_MATMUL_DESC_TRANSB, op_y}}) {
    s = CublasStatus(
        lt_,
        lt_.MatmulDescSetAttribute(desc_.get(), attr, &value, sizeof(value)),
        "cublasLtMatmulDescSetAttribute");
    if (!s.ok()) return s;
  }
  return CublasStatus(
      lt_,
      lt_.MatmulDescSetAttribute(desc_.get(), CUBLASLT_MATMUL_DESC_EPILOGUE,
                                 &key.epilogue, sizeof(key.epilogue)),
      "epilogue");
}

absl::Status PreparedGemm::InitLayouts(const GemmKey& key) {
  const cudaDataType_t in = CudaType(key.ab_type);
  // x: op(x) is n x k; stored (column-major) n x k, or k x n when transposed.
  absl::Status s =
      key.trans_b
          ? Layout(x_, in, key.k, key.n, key.k, key.batch, key.stride_b)
          : Layout(x_, in, key.n, key.k, key.n, key.batch, key.stride_b);
  if (!s.ok()) return s;
  // y: op(y) is k x m.
  s = key.trans_a
          ? Layout(y_, in, key.m, key.k, key.m, key.batch, key.stride_a)
          : Layout(y_, in, key.k, key.m, key.k, key.batch, key.stride_a);
  if (!s.ok()) return s;
  // C and D: one layout (C is D's memory with beta 0, or the residual z,
  // laid out as D, with beta 1).
  const cudaDataType_t out = CudaType(key.c_type);
  return Layout(d_, out, key.n, key.m, key.n, key.batch, key.stride_c);
}

absl::Status PreparedGemm::Layout(LtMatrixLayout& layout, cudaDataType_t type,
                                  uint64_t rows, uint64_t cols, int64_t ld,
                                  int64_t batch, int64_t stride) {
  absl::Status s = CublasStatus(
      lt_, lt_.MatrixLayoutCreate(layout.receive(), type, rows, cols, ld),
      "cublasLtMatrixLayoutCreate");
  if (!s.ok() || batch == 1) return s;
  const int32_t count = static_cast<int32_t>(batch);
  s = CublasStatus(lt_,
                   lt_.MatrixLayoutSetAttribute(
                       layout.get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                       sizeof(count)),
                   "batch count");
  if (!s.ok()) return s;
  return CublasStatus(
      lt_,
      lt_.MatrixLayoutSetAttribute(layout.get(),
                                   CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                   &stride, sizeof(stride)),
      "batch stride");
}

// The heuristic's best algorithm within the workspace, for the key's
// alignment.
absl::Status PreparedGemm::ChooseAlgo(cublasLtHandle_t handle,
                                      const GemmKey& key) {
  LtMatmulPreference pref(lt_);
  absl::Status s = CublasStatus(lt_, lt_.MatmulPreferenceCreate(pref.receive()),
                                "cublasLtMatmulPreferenceCreate");
  if (!s.ok()) return s;
  const uint64_t workspace = workspace_bytes_;
  s = CublasStatus(lt_,
                   lt_.MatmulPreferenceSetAttribute(
                       pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                       &workspace, sizeof(workspace)),
                   "workspace preference");
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (!s.ok()) return s;
    s = CublasStatus(
        lt_,
        lt_.MatmulPreferenceSetAttribute(pref.get(), attr, &key.alignment,
                                         sizeof(key.alignment)),
        "alignment preference");
  }
  if (!s.ok()) return s;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  s = CublasStatus(lt_,
                   lt_.MatmulAlgoGetHeuristic(handle, desc_.get(), x_.get(),
                                              y_.get(), d_.get(), d_.get(),
                                              pref.get(), 1, &result, &found),
                   "cublasLtMatmulAlgoGetHeuristic");
  if (!s.ok()) return s;
  if (found == 0) {
    return absl::InternalError(absl::StrCat(
        "cuBLASLt has no algorithm for a ", key.m, "x", key.k, " by ", key.k,
        "x", key.n, " ", DeviceFloatName(key.ab_type), " GEMM into ",
        DeviceFloatName(key.c_type), " (batch ", key.batch, ")"));
  }
  algo_ = result.algo;
  return absl::OkStatus();
}

absl::Status PreparedGemm::Run(cublasLtHandle_t handle, const GemmArgs& args,
                               void* workspace, cudaStream_t stream) const {
  if (args.bias.data != nullptr) {
    const void* bias = args.bias.data;
    absl::Status s =
        CublasStatus(lt_,
                     lt_.MatmulDescSetAttribute(
                         desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                         sizeof(bias)),
                     "bias pointer");
    if (!s.ok()) return s;
  }
  // D = epilogue(alpha A B + beta C): the residual z as C with beta 1.
  const float beta = args.z.data != nullptr ? 1.0f : 0.0f;
  const void* c = args.z.data != nullptr ? args.z.data : args.c.data;
  const bool half = args.a_half != nullptr;
  const void* x = half ? static_cast<const void*>(args.b_half) : args.b;
  const void* y = half ? static_cast<const void*>(args.a_half) : args.a;
  return CublasStatus(
      lt_,
      lt_.Matmul(handle, desc_.get(), &args.alpha, x, x_.get(), y, y_.get(),
                 &beta, c, d_.get(), args.c.data, d_.get(), &algo_, workspace,
                 workspace_bytes_, stream),
      "cublasLtMatmul");
}

CudaGemm::CudaGemm(const CublasLt& lt, bool tf32, size_t workspace_bytes)
    : lt_(lt), tf32_(tf32), workspace_bytes_(workspace_bytes), handle_(lt) {}

CudaGemm::~CudaGemm() = default;

absl::StatusOr<std::unique_ptr<CudaGemm>> CudaGemm::Create(
    const CublasLt& lt, bool tf32, size_t workspace_bytes) {
  std::unique_ptr<CudaGemm> gemm(new CudaGemm(lt, tf32, workspace_bytes));
  absl::Status s =
      CublasStatus(lt, lt.Create(gemm->handle_.receive()), "cublasLtCreate");
  if (!s.ok()) return s;
  return gemm;
}

absl::Status CudaGemm::Run(const GemmArgs& args, void* workspace,
                           cudaStream_t stream, bool* fused) {
  const GemmKey key = KeyOf(args, fused);
  auto it = prepared_.find(key);
  if (it == prepared_.end()) {
    auto prepared = std::make_unique<PreparedGemm>(lt_, workspace_bytes_);
    if (absl::Status s = prepared->Init(handle_.get(), key, tf32_); !s.ok())
      return s;
    it = prepared_.emplace(key, std::move(prepared)).first;
  }
  return it->second->Run(handle_.get(), args, workspace, stream);
}

}  // namespace coalesce
