#include "profile/session.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "api/pipeline_parse.h"
#include "common/strings.h"
#include "profile/measure.h"
#include "profile/oip_client.h"
#include "profile/yaml_edit.h"

namespace pipescale::profile {
namespace {

// What to know of the pod measured: a server that batches, or hardware of another class.
std::vector<std::string> PodNotes(const PodChoice& pod, const Job& job) {
  std::vector<std::string> notes;
  if (pod.batch > 1) {
    notes.push_back(StrFormat(
        "pod %s runs with %s=%d: a server that batches may hold each request until its batch "
        "fills or its wait ends; pipescale's model server reports that wait (subtracted), other "
        "servers may not: profile a pod that runs batches of 1",
        pod.name.c_str(), job.batch_env.c_str(), pod.batch));
  }
  if (!pod.hardware_class.empty() && pod.hardware_class != job.target.hardware_class) {
    notes.push_back("pod " + pod.name + " runs on hardware class " + pod.hardware_class +
                    " (its pipescale.io/hardware-class label); the profile is of " +
                    job.target.hardware_class);
  }
  return notes;
}

// The file's text, at most the largest document a pipeline may be.
std::optional<std::string> ReadDocument(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(limits::kMaxDocumentBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad() || static_cast<size_t>(in.gcount()) > limits::kMaxDocumentBytes) {
    return std::nullopt;
  }
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

Result<std::string> Edited(const std::string& file, const Target& target, const Latency& latency) {
  const std::optional<std::string> text = ReadDocument(file);
  if (!text) return Error{ErrorKind::kInvalid, "cannot read the file"};
  return SetProfileLatency(*text, target, latency);
}

}  // namespace

Result<Endpoint> FindEndpoint(const Options& options, const Job& job) {
  if (!options.address.empty()) return Endpoint{.address = options.address};
  ClusterTarget cluster = options.cluster;
  cluster.batch_env = job.batch_env;
  auto pod = FindDeploymentPod(cluster);
  if (!pod) {
    std::string message = pod.error().message;
    if (pod.error().kind == ErrorKind::kNotFound && cluster.deployment != job.deployment_name) {
      message += "; the operator names this variant's Deployment on " + job.target.hardware_class +
                 " " + QuoteUserText(job.deployment_name);
    }
    return Error{pod.error().kind, message};
  }
  return Endpoint{.address = pod->address, .pod = pod->name, .notes = PodNotes(*pod, job)};
}

Result<Report> MeasureEndpoint(const Options& options, const Job& job, const Endpoint& endpoint,
                               const std::function<void(const Progress&)>& progress) {
  const std::string model = options.model.empty() ? job.target.task : options.model;
  OipClient client(endpoint.address, model, options.timeout);
  auto inputs = client.Handshake(options.row_shape);
  if (!inputs) return inputs.error();
  auto measured = Measure(client,
                          {.batches = job.batches,
                           .requests = options.requests,
                           .warmup = options.warmup,
                           .inputs = *inputs},
                          progress);
  if (!measured) return measured.error();
  auto latency = MakeLatency(*measured, options.statistic, options.fit);
  if (!latency) return latency.error();
  std::vector<std::string> notes = endpoint.notes;
  if (!client.keeps_alive()) {
    notes.emplace_back(
        "the server closes its connection after each answer: each request opened a "
        "new one, and its round trip includes connecting");
  }
  return Report{.target = job.target,
                .address = endpoint.address,
                .model = model,
                .pod = endpoint.pod,
                .inputs = DescribeInputs(*inputs),
                .statistic = options.statistic,
                .requests = options.requests,
                .warmup = options.warmup,
                .batches = std::move(*measured),
                .latency = std::move(*latency),
                .notes = std::move(notes)};
}

Status CheckWritable(const std::string& file, const Job& job, FitModel fit) {
  std::vector<MeasuredBatch> stand_in;
  for (int b : job.batches) stand_in.push_back({.batch = b, .summary = {.mean_ms = 1.0 + b}});
  auto latency = MakeLatency(stand_in, Statistic::kMean, fit);
  if (!latency) return latency.error();
  if (auto edited = Edited(file, job.target, *latency); !edited) return edited.error();
  const std::filesystem::path dir = std::filesystem::absolute(file).parent_path();
  if (access(file.c_str(), W_OK) != 0 || access(dir.c_str(), W_OK) != 0) {
    return Error{ErrorKind::kInvalid, "the file or its directory is not writable"};
  }
  return Done{};
}

Status WriteLatency(const std::string& file, const Target& target, const Latency& latency) {
  auto edited = Edited(file, target, latency);
  if (!edited) return edited.error();
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::weakly_canonical(file, ec);
  const std::filesystem::path temporary = path.string() + ".pipescale-tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << *edited;
    if (!out.flush()) return Error{ErrorKind::kTransient, "cannot write " + temporary.string()};
  }
  std::filesystem::permissions(temporary, std::filesystem::status(path, ec).permissions(), ec);
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    return Error{ErrorKind::kTransient, "cannot replace the file: " + ec.message()};
  }
  return Done{};
}

}  // namespace pipescale::profile
