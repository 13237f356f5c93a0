#include "server/model_warmup.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/data_type.h"
#include "engine/event.h"
#include "spdlog/spdlog.h"

namespace coalesce {
namespace {

int64_t Elements(const Shape& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// One row of `dtype` and `count` elements: zeros (BYTES: empty strings).
std::string ZeroRow(DataType dtype, int64_t count) {
  if (dtype == DataType::kBytes) return std::string(4 * count, '\0');
  return std::string(count * ElementByteSize(dtype), '\0');
}

// One row of random elements: floats in [-1, 1) (float16: finite values
// below 1 in magnitude), integers in [0, 10) (small enough to index any
// embedding), booleans 0 or 1; BYTES: empty strings.
std::string RandomRow(DataType dtype, int64_t count, std::mt19937& rng) {
  if (dtype == DataType::kBytes) return ZeroRow(dtype, count);
  const size_t size = ElementByteSize(dtype);
  std::string out(count * size, '\0');
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  for (int64_t i = 0; i < count; ++i) {
    char* at = out.data() + i * size;
    switch (dtype) {
      case DataType::kFp32: {
        const float f = real(rng);
        std::memcpy(at, &f, 4);
        break;
      }
      case DataType::kFp64: {
        const double d = real(rng);
        std::memcpy(at, &d, 8);
        break;
      }
      case DataType::kBf16: {  // the upper half of a float32
        const float f = real(rng);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        const uint16_t half = static_cast<uint16_t>(bits >> 16);
        std::memcpy(at, &half, 2);
        break;
      }
      case DataType::kFp16: {  // exponent 2^-4 .. 2^-1, either sign
        const uint16_t half = static_cast<uint16_t>(0x2c00 + rng() % 0x0c00 +
                                                    (rng() % 2 ? 0x8000 : 0));
        std::memcpy(at, &half, 2);
        break;
      }
      case DataType::kBool:
        at[0] = static_cast<char>(rng() % 2);
        break;
      default: {  // integers, little-endian
        const uint64_t v = rng() % 10;
        std::memcpy(at, &v, size);
        break;
      }
    }
  }
  return out;
}

// The serialized BYTES elements in `data`, or -1 when it is not a whole
// number of them.
int64_t CountBytesElements(const std::string& data) {
  size_t pos = 0;
  int64_t count = 0;
  while (pos + 4 <= data.size()) {
    uint32_t length;
    std::memcpy(&length, data.data() + pos, 4);
    pos += 4;
    if (data.size() - pos < length) return -1;
    pos += length;
    ++count;
  }
  return pos == data.size() ? count : -1;
}

absl::StatusOr<std::string> ReadWarmupFile(
    const std::filesystem::path& model_dir, const std::string& name) {
  const std::filesystem::path relative(name);
  if (name.empty() || relative.is_absolute()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input_data_file '", name, "' must be a file of the warmup folder"));
  }
  for (const auto& part : relative) {
    if (part == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "input_data_file '", name, "' leaves the warmup folder"));
    }
  }
  std::ifstream in(model_dir / "warmup" / relative, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read warmup/", name));
  }
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The config input's dims with the sample's filled in where they vary.
absl::StatusOr<Shape> SampleDims(const inference::ModelInput& input,
                                 const inference::ModelWarmup::Input& given) {
  if (given.dims_size() != input.dims_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dims of rank ", given.dims_size(),
                     ", the input has rank ", input.dims_size()));
  }
  Shape dims;
  for (int d = 0; d < input.dims_size(); ++d) {
    const int64_t want = input.dims(d), got = given.dims(d);
    if (got < 0 || (want >= 0 && got != want)) {
      return absl::InvalidArgumentError(
          absl::StrCat("dim ", d, " is ", got, ", the input's is ", want));
    }
    dims.push_back(got);
  }
  return dims;
}

// Input `input` of one sample, `rows` rows of `dims`.
absl::StatusOr<std::string> SampleData(
    const inference::ModelInput& input,
    const inference::ModelWarmup::Input& given, int64_t rows, const Shape& dims,
    const std::filesystem::path& model_dir, std::mt19937& rng) {
  const auto dtype = static_cast<DataType>(input.data_type());
  const int64_t count = Elements(dims);
  std::string row;
  switch (given.input_data_type_case()) {
    case inference::ModelWarmup::Input::kZeroData:
      row = ZeroRow(dtype, count);
      break;
    case inference::ModelWarmup::Input::kRandomData:
      row = RandomRow(dtype, count, rng);
      break;
    case inference::ModelWarmup::Input::kInputDataFile: {
      absl::StatusOr<std::string> file =
          ReadWarmupFile(model_dir, given.input_data_file());
      if (!file.ok()) return file.status();
      const int64_t have = dtype == DataType::kBytes
                               ? CountBytesElements(*file)
                               : static_cast<int64_t>(file->size());
      const int64_t one =
          dtype == DataType::kBytes
              ? count
              : count * static_cast<int64_t>(ElementByteSize(dtype));
      if (have == one * rows) return *std::move(file);
      if (have != one) {
        return absl::InvalidArgumentError(
            absl::StrCat("warmup/", given.input_data_file(), " holds ", have,
                         dtype == DataType::kBytes ? " elements" : " bytes",
                         "; a row is ", one, " and the batch ", one * rows));
      }
      row = *std::move(file);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "no data: set zero_data, random_data or input_data_file");
  }
  std::string data;
  data.reserve(row.size() * rows);
  for (int64_t r = 0; r < rows; ++r) data += row;
  return data;
}

// The config's inputs in the model's order; null where the config has no
// input of that name.
std::vector<const inference::ModelInput*> InModelOrder(
    const inference::ModelConfig& config, const ModelSignature& signature) {
  std::vector<const inference::ModelInput*> inputs;
  for (const TensorSpec& spec : signature.inputs) {
    const inference::ModelInput* found = nullptr;
    for (const auto& input : config.input())
      if (input.name() == spec.name) found = &input;
    inputs.push_back(found);
  }
  return inputs;
}

// Steps 1 of the executor protocol: `slot` sized for `batch`.
absl::Status SizeSlot(BatchSlot* slot, const WarmupBatch& batch) {
  if (absl::Status s = slot->SetInputShapes(batch.shapes); !s.ok()) return s;
  for (size_t i = 0; i < batch.data.size(); ++i) {
    const int index = static_cast<int>(i);
    if (slot->input_byte_size(index) != batch.data[i].size()) {
      if (absl::Status s = slot->SetInputByteSize(index, batch.data[i].size());
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

// One batch through `instance`'s slot `slot_index`, waited for.
absl::Status RunBatch(ExecutorInstance& instance, const WarmupBatch& batch,
                      int slot_index = 0) {
  BatchSlot* slot = instance.slot(slot_index);
  if (absl::Status s = SizeSlot(slot, batch); !s.ok()) return s;
  for (size_t i = 0; i < batch.data.size(); ++i) {
    std::memcpy(slot->input_data(static_cast<int>(i)), batch.data[i].data(),
                batch.data[i].size());
  }
  return instance.Submit(slot)->Wait();
}

size_t TotalBytes(const WarmupBatch& batch) {
  size_t bytes = 0;
  for (const std::string& d : batch.data) bytes += d.size();
  return bytes;
}

// Every slot of `instance` sized for the largest of `prepared`.
absl::Status SizeEverySlot(ExecutorInstance& instance,
                           const std::vector<WarmupBatch>& prepared) {
  if (prepared.empty()) return absl::OkStatus();
  const WarmupBatch* largest = &prepared.front();
  for (const WarmupBatch& b : prepared)
    if (TotalBytes(b) > TotalBytes(*largest)) largest = &b;
  for (int k = 0; k < instance.num_slots(); ++k) {
    absl::Status s = SizeSlot(instance.slot(k), *largest);
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("sizing slot ", k, " for '", largest->name,
                                 "': ", s.message()));
    }
  }
  return absl::OkStatus();
}

// Runs each of `batches` on the instance's slots other than 0 while the
// slot is not ReadyFor it (at most `runs` times); counts them in *ran.
absl::Status ReadyOtherSlots(ExecutorInstance& instance,
                             const std::vector<WarmupBatch>& batches,
                             int* ran) {
  for (int k = 1; k < instance.num_slots(); ++k) {
    for (const WarmupBatch& batch : batches) {
      for (int run = 0;
           run < batch.runs && !instance.slot(k)->ReadyFor(batch.shapes);
           ++run) {
        absl::Status s = RunBatch(instance, batch, k);
        if (!s.ok()) {
          return absl::Status(
              s.code(), absl::StrCat("'", batch.name, "' on slot ", k, ": ",
                                     s.message()));
        }
        ++*ran;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<WarmupBatch>> WarmupBatchesFromConfig(
    const inference::ModelConfig& config, const ModelSignature& signature,
    const std::filesystem::path& model_dir) {
  std::vector<WarmupBatch> batches;
  if (config.model_warmup_size() > 0 && config.has_sequence_batching()) {
    return absl::InvalidArgumentError(
        "model_warmup with sequence_batching is not supported (the "
        "sequence's control inputs have no warm-up data)");
  }
  const bool batching = config.max_batch_size() > 0;
  for (int s = 0; s < config.model_warmup_size(); ++s) {
    const inference::ModelWarmup& sample = config.model_warmup(s);
    const std::string label =
        sample.name().empty() ? absl::StrCat("#", s) : sample.name();
    auto fail = [&](const std::string& what) {
      return absl::InvalidArgumentError(
          absl::StrCat("model_warmup '", label, "': ", what));
    };
    const int64_t rows = sample.batch_size();
    if (batching && (rows < 1 || rows > config.max_batch_size())) {
      return fail(absl::StrCat("batch_size ", rows, " is not in 1..",
                               config.max_batch_size(), " (max_batch_size)"));
    }
    if (!batching && rows > 1) {
      return fail(absl::StrCat("batch_size ", rows,
                               " for a model without batching (0 or 1)"));
    }
    for (const auto& [name, unused] : sample.inputs()) {
      bool known = false;
      for (const auto& input : config.input()) known |= input.name() == name;
      if (!known) return fail(absl::StrCat("'", name, "' is not an input"));
    }
    WarmupBatch batch;
    batch.name = label;
    batch.runs = sample.count() > 0 ? static_cast<int>(sample.count()) : 1;
    std::mt19937 rng(static_cast<uint32_t>(s + 1));
    for (const inference::ModelInput* in : InModelOrder(config, signature)) {
      if (in == nullptr) return fail("the config lacks a model input");
      const inference::ModelInput& input = *in;
      auto given = sample.inputs().find(input.name());
      if (given == sample.inputs().end())
        return fail(absl::StrCat("input '", input.name(), "' has no data"));
      if (given->second.data_type() != input.data_type()) {
        return fail(absl::StrCat(
            "input '", input.name(), "': data_type ",
            inference::DataType_Name(given->second.data_type()),
            ", the input's is ", inference::DataType_Name(input.data_type())));
      }
      absl::StatusOr<Shape> dims = SampleDims(input, given->second);
      if (!dims.ok()) {
        return fail(absl::StrCat("input '", input.name(),
                                 "': ", dims.status().message()));
      }
      const int64_t batch_rows = batching ? rows : 1;
      absl::StatusOr<std::string> data =
          SampleData(input, given->second, batch_rows, *dims, model_dir, rng);
      if (!data.ok()) {
        return fail(absl::StrCat("input '", input.name(),
                                 "': ", data.status().message()));
      }
      Shape shape = *dims;
      if (batching) shape.insert(shape.begin(), rows);
      batch.shapes.push_back(std::move(shape));
      batch.data.push_back(*std::move(data));
    }
    batches.push_back(std::move(batch));
  }
  return batches;
}

std::vector<WarmupBatch> PreparedSizeBatches(
    const inference::ModelConfig& config, const ModelSignature& signature,
    const ExecutorInstance& instance, std::string* why) {
  std::vector<WarmupBatch> batches;
  if (config.max_batch_size() <= 0 || config.has_sequence_batching()) {
    *why = "the model does not batch, or batches sequences";
    return batches;
  }
  const std::vector<const inference::ModelInput*> inputs =
      InModelOrder(config, signature);
  for (const inference::ModelInput* input : inputs) {
    if (input == nullptr) {
      *why = "the config lacks a model input";
      return batches;
    }
    for (int64_t d : input->dims()) {
      if (d < 0) {
        *why = absl::StrCat("input '", input->name(), "' has a variable dim");
        return batches;
      }
    }
  }
  std::vector<int64_t> sizes =
      instance.PreparedBatchSizes(config.max_batch_size());
  std::sort(sizes.rbegin(), sizes.rend());  // largest first: see the header
  for (int64_t rows : sizes) {
    WarmupBatch zeros;
    zeros.name = absl::StrCat("batch size ", rows);
    zeros.runs = 2;  // the first binds the plan, the second captures
    for (const inference::ModelInput* input : inputs) {
      Shape shape(input->dims().begin(), input->dims().end());
      const std::string row =
          ZeroRow(static_cast<DataType>(input->data_type()), Elements(shape));
      shape.insert(shape.begin(), rows);
      zeros.shapes.push_back(std::move(shape));
      std::string data;
      for (int64_t r = 0; r < rows; ++r) data += row;
      zeros.data.push_back(std::move(data));
    }
    const int variants = instance.PreparedVariants(zeros.shapes);
    for (int v = 0; v < variants; ++v) {
      WarmupBatch batch = zeros;
      if (variants > 1) {
        absl::StrAppend(&batch.name, ", variant ", v + 1, " of ", variants);
      }
      absl::Status s =
          instance.WritePreparedVariant(batch.shapes, v, &batch.data);
      if (!s.ok()) {
        *why = absl::StrCat("'", batch.name, "': ", s.message());
        return {};
      }
      batches.push_back(std::move(batch));
    }
  }
  return batches;
}

absl::StatusOr<WarmupReport> WarmUpInstances(
    const inference::ModelConfig& config, const ModelSignature& signature,
    const std::vector<WarmupBatch>& samples,
    const std::vector<std::unique_ptr<ExecutorInstance>>& instances) {
  const auto start = std::chrono::steady_clock::now();
  WarmupReport report;
  for (size_t i = 0; i < instances.size(); ++i) {
    std::string why;
    const std::vector<WarmupBatch> prepared =
        PreparedSizeBatches(config, signature, *instances[i], &why);
    std::vector<WarmupBatch> batches = samples;
    batches.insert(batches.end(), prepared.begin(), prepared.end());
    if (!why.empty() &&
        !instances[i]->PreparedBatchSizes(config.max_batch_size()).empty()) {
      spdlog::info("model '{}': instance {}: batch sizes not prepared: {}",
                   config.name(), i, why);
    }
    auto failed = [i](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat("warm-up failed on instance ",
                                                 i, ": ", s.message()));
    };
    if (absl::Status s = SizeEverySlot(*instances[i], prepared); !s.ok())
      return failed(s);
    for (const WarmupBatch& batch : batches) {
      const auto batch_start = std::chrono::steady_clock::now();
      for (int run = 0; run < batch.runs; ++run) {
        if (absl::Status s = RunBatch(*instances[i], batch); !s.ok()) {
          return absl::Status(s.code(), absl::StrCat("warm-up '", batch.name,
                                                     "' failed on instance ", i,
                                                     ": ", s.message()));
        }
        ++report.batches;
      }
      // Each one, so that a slow load says where its time goes (a GPU
      // size's first run tunes its kernels).
      spdlog::info("model '{}': instance {}: warm-up '{}' {:.3f} s ({} run(s))",
                   config.name(), i, batch.name,
                   std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - batch_start)
                       .count(),
                   batch.runs);
    }
    absl::Status s = ReadyOtherSlots(*instances[i], prepared, &report.batches);
    if (!s.ok()) return failed(s);
  }
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return report;
}

}  // namespace coalesce
