// graphfuse conformance: runs ONNX backend test cases, each in a child process with a time and
// memory limit, so a crash or a hang in one case is a failed case, not a failed run.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <regex>

#include "cli_util.h"
#include "commands.h"
#include "conformance_case.h"

namespace gf::cli {

namespace fs = std::filesystem;

namespace {

struct ConformanceOptions {
  std::string dir, json, filter, device = "cpu";
  int jobs = 1;
  double timeout_s = 60;
  int64_t memory_limit_mb = 8192;
  bool verbose = false;
};

struct CaseRun {
  std::string name;  // path relative to the root, e.g. "node/test_abs"
  std::string dir;
  CaseResult result;
  double seconds = 0;
};

// Case folders (those holding model.onnx) under `root`, up to three levels down, sorted.
std::vector<CaseRun> discover(const fs::path& root, const std::string& filter) {
  std::vector<CaseRun> cases;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error(ErrorCode::kIoError, "'" + root.string() + "' is not a folder");
  auto add = [&](const fs::path& dir) {
    std::string name = fs::relative(dir, root, ec).generic_string();
    if (name.empty() || name == ".") name = dir.filename().string();
    cases.push_back({name, dir.string(), {}, 0});
  };
  if (fs::exists(root / "model.onnx")) {
    add(root);
  } else {
    for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it.depth() >= 3) it.disable_recursion_pending();
      if (it->is_directory() && fs::exists(it->path() / "model.onnx")) {
        add(it->path());
        it.disable_recursion_pending();
      }
    }
  }
  std::regex re;
  try {
    re = std::regex(filter.empty() ? ".*" : filter);
  } catch (const std::regex_error& e) {
    throw Error(ErrorCode::kInvalidArgument, "--filter '" + filter + "' is not a valid regex: " + e.what());
  }
  std::erase_if(cases, [&](const CaseRun& c) { return !std::regex_search(c.name, re); });
  std::sort(cases.begin(), cases.end(), [](const CaseRun& a, const CaseRun& b) { return a.name < b.name; });
  return cases;
}

// A running child: it writes "<status digit><reason>" to its pipe and exits.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  std::string message;
  std::chrono::steady_clock::time_point start;
};

Child spawn(const CaseRun& c, size_t index, const ConformanceOptions& o, Device device) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorCode::kIoError, "pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Error(ErrorCode::kIoError, "fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    const rlim_t bytes = static_cast<rlim_t>(o.memory_limit_mb) << 20;
    rlimit lim{bytes, bytes};
    setrlimit(RLIMIT_AS, &lim);
    CaseResult r;
    try {
      r = run_conformance_case(c.dir, device);
    } catch (const std::exception& e) {  // e.g. std::bad_alloc at the memory limit
      r = {CaseStatus::kFailed, e.what()};
    }
    std::string msg = std::to_string(static_cast<int>(r.status)) + r.reason;
    for (char& ch : msg) if (ch == '\n') ch = ' ';
    size_t off = 0;
    while (off < msg.size()) {
      const ssize_t n = ::write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0], index, "", std::chrono::steady_clock::now()};
}

CaseResult finish(Child& ch, bool timed_out, double timeout_s) {
  int status = 0;
  if (timed_out) ::kill(ch.pid, SIGKILL);
  ::waitpid(ch.pid, &status, 0);
  ::close(ch.fd);
  if (timed_out) return {CaseStatus::kFailed, "timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s"};
  if (WIFSIGNALED(status)) {
    return {CaseStatus::kFailed, std::string("crashed: ") + strsignal(WTERMSIG(status))};
  }
  if (ch.message.empty()) return {CaseStatus::kFailed, "the case runner exited without a result"};
  return {static_cast<CaseStatus>(ch.message[0] - '0'), ch.message.substr(1)};
}

void run_all(std::vector<CaseRun>& cases, const ConformanceOptions& o, Device device) {
  std::vector<Child> running;
  size_t next = 0;
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && running.size() < static_cast<size_t>(o.jobs)) {
      running.push_back(spawn(cases[next], next, o, device));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const Child& ch : running) fds.push_back({ch.fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    const auto now = std::chrono::steady_clock::now();
    for (size_t i = running.size(); i-- > 0;) {
      Child& ch = running[i];
      bool done = false;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        const ssize_t n = ::read(ch.fd, buf, sizeof buf);
        if (n > 0) ch.message.append(buf, static_cast<size_t>(n));
        else done = true;
      }
      const double elapsed = std::chrono::duration<double>(now - ch.start).count();
      const bool timed_out = !done && elapsed > o.timeout_s;
      if (!done && !timed_out) continue;
      CaseRun& c = cases[ch.index];
      c.result = finish(ch, timed_out, o.timeout_s);
      c.seconds = elapsed;
      if (c.result.status == CaseStatus::kFailed) {
        std::printf("FAIL %s: %s\n", c.name.c_str(), c.result.reason.c_str());
      } else if (o.verbose) {
        std::printf("%s %s%s%s\n", c.result.status == CaseStatus::kPassed ? "ok  " : "skip", c.name.c_str(),
                    c.result.reason.empty() ? "" : ": ", c.result.reason.c_str());
      }
      std::fflush(stdout);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

const char* status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::kPassed: return "passed";
    case CaseStatus::kFailed: return "failed";
    case CaseStatus::kUnsupported: return "unsupported";
  }
  return "?";
}

int run_conformance(const ConformanceOptions& o) {
  if (o.device != "cpu" && o.device != "cuda") {
    throw Error(ErrorCode::kInvalidArgument, "--device must be cpu or cuda, got '" + o.device + "'");
  }
  if (o.jobs < 1 || o.timeout_s <= 0 || o.memory_limit_mb < 64) {
    throw Error(ErrorCode::kInvalidArgument, "--jobs, --timeout and --memory-limit-mb must be positive (memory at least 64)");
  }
  std::vector<CaseRun> cases = discover(o.dir, o.filter);
  if (cases.empty()) throw Error(ErrorCode::kInvalidArgument, "no test cases (folders with model.onnx) under '" + o.dir + "'");
  run_all(cases, o, o.device == "cuda" ? Device::kCuda : Device::kCpu);

  int counts[3] = {0, 0, 0};
  std::string json_cases;
  for (const CaseRun& c : cases) {
    ++counts[static_cast<int>(c.result.status)];
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", c.seconds);
    json_cases += std::string(json_cases.empty() ? "" : ",\n") + "    {\"name\": " + json_string(c.name) +
                  ", \"status\": \"" + status_name(c.result.status) + "\", \"reason\": " + json_string(c.result.reason) +
                  ", \"seconds\": " + secs + "}";
  }
  const std::vector<std::string> ops = supported_onnx_op_types();
  if (!o.json.empty()) {
    std::string op_list;
    for (const std::string& op : ops) op_list += (op_list.empty() ? "" : ", ") + json_string(op);
    write_text_file(o.json, "{\n  \"device\": " + json_string(o.device) + ",\n  \"passed\": " + std::to_string(counts[0]) +
                                ",\n  \"failed\": " + std::to_string(counts[1]) + ",\n  \"unsupported\": " +
                                std::to_string(counts[2]) + ",\n  \"supported_op_types\": [" + op_list +
                                "],\n  \"cases\": [\n" + json_cases + "\n  ]\n}\n");
  }
  std::printf("supported ONNX op types: %zu\n", ops.size());
  std::printf("conformance: %d passed, %d failed, %d unsupported\n", counts[0], counts[1], counts[2]);
  return counts[1] == 0 ? 0 : 1;
}

}  // namespace

void add_conformance_command(CLI::App& app, std::vector<Command>& commands) {
  auto o = std::make_shared<ConformanceOptions>();
  CLI::App* sub = app.add_subcommand("conformance", "Run ONNX backend test cases (folders with model.onnx and test_data_set_*)");
  sub->add_option("dir", o->dir, "a data folder (e.g. onnx/backend/test/data), a kind folder or one case")->required();
  sub->add_option("--json", o->json, "write per-case results as JSON");
  sub->add_option("--filter", o->filter, "run only cases whose name (e.g. node/test_abs) matches this regex");
  sub->add_option("--device", o->device, "cpu or cuda")->capture_default_str();
  sub->add_option("--jobs,-j", o->jobs, "cases run in parallel")->capture_default_str();
  sub->add_option("--timeout", o->timeout_s, "seconds per case")->capture_default_str();
  sub->add_option("--memory-limit-mb", o->memory_limit_mb, "address-space limit per case")->capture_default_str();
  sub->add_flag("--verbose,-v", o->verbose, "also list passed and unsupported cases");
  commands.push_back({sub, [o] { return run_conformance(*o); }});
}

}  // namespace gf::cli
