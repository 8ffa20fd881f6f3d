#include "runtime/cpu/jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "codegen/cpp/prelude.h"
#include "common/error.h"

extern char** environ;

namespace luminal::runtime::cpu {

namespace fs = std::filesystem;

namespace {

// -ffp-contract=off: no FMA contraction across ops, so a fused chain rounds like eager.
// -fopenmp-simd honours `omp simd` (vectorised reductions, libmvec calls) without an OpenMP
// runtime. --no-as-needed keeps libmvec: dropping it silently would unvectorise nothing but
// fail to load; see research/cpu-baselines.md on inductor losing SIMD this way.
const char* kFlags[] = {"-O3", "-march=native", "-fPIC", "-shared", "-std=c++17", "-fopenmp-simd",
                        "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-w"};
const char* kLinkFlags[] = {"-Wl,--no-as-needed", "-lmvec", "-lm"};

std::string compiler() {
  const char* cxx = std::getenv("LUMINAL_CXX");
  return cxx && *cxx ? cxx : "g++";
}

uint64_t fnv1a(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int run_process(const std::vector<std::string>& args, const std::string& stderr_path) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 1, stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  return static_cast<int>(pid);
}

int wait_process(int pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

// A kernel built with -march=native on another machine must not be loaded here.
const std::string& toolchain_identity() {
  static const std::string identity = [] {
    std::string id = compiler();
    const fs::path tmp = fs::temp_directory_path() / ("luminal-cxx-version-" + std::to_string(getpid()));
    const int pid = run_process({compiler(), "-dumpfullversion", "-dumpmachine"}, tmp.string());
    if (pid > 0 && wait_process(pid) == 0) id += " " + read_file(tmp);
    std::error_code ec;
    fs::remove(tmp, ec);
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) id += line + "\n";
      if (line.rfind("flags", 0) == 0) break;
    }
    for (const char* f : kFlags) id += std::string(" ") + f;
    for (const char* f : kLinkFlags) id += std::string(" ") + f;
    return id;
  }();
  return identity;
}

std::string content_hash(const std::string& text) {
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(fnv1a(text, 14695981039346656037ull)),
                static_cast<unsigned long long>(fnv1a(text, 0x9e3779b97f4a7c15ull)));
  return out;
}

std::string default_cache_dir() {
  if (const char* dir = std::getenv("LUMINAL_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "luminal").string();
  if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".cache" / "luminal").string();
  return (fs::temp_directory_path() / "luminal-cache").string();
}

KernelLibrary::~KernelLibrary() {
  for (void* h : handles) dlclose(h);
}

KernelFn KernelLibrary::function(const std::string& name) const {
  for (const auto& [n, fn] : functions)
    if (n == name) return fn;
  INTERNAL_ERROR() << "kernel " << name << " was not built";
  return nullptr;
}

std::shared_ptr<KernelLibrary> build_kernels(const std::vector<std::string>& names, const std::vector<std::string>& functions,
                                             const JitOptions& options, JitStats& stats) {
  const auto start = std::chrono::steady_clock::now();
  auto library = std::make_shared<KernelLibrary>();
  if (names.empty()) return library;
  const fs::path dir = fs::path(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir) / "cpu";
  std::error_code ec;
  fs::create_directories(dir, ec);
  USER_CHECK(!ec) << "cannot create the kernel cache directory " << dir.string() << ": " << ec.message()
                  << " (set the cache_dir option to a writable directory)";

  // Deterministic batching: kernels sorted by name, dealt into translation units by size, so
  // the same kernel set always gives the same units (and the same cache entries).
  std::vector<size_t> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return names[a] < names[b]; });
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int jobs = std::max(1, options.jobs > 0 ? options.jobs : hw);
  size_t total = 0;
  for (const std::string& f : functions) total += f.size();
  // Small graphs: one unit. Large ones: one unit per job, each big enough to amortise start-up.
  const size_t units = std::clamp<size_t>(total / 60000 + 1, 1, static_cast<size_t>(jobs));
  std::vector<std::string> sources(units, codegen::cpp::prelude());
  std::vector<std::vector<size_t>> members(units);
  std::vector<size_t> sizes(units, 0);
  for (size_t i : order) {
    const size_t u = static_cast<size_t>(std::min_element(sizes.begin(), sizes.end()) - sizes.begin());
    sources[u] += "\n" + functions[i];
    sizes[u] += functions[i].size();
    members[u].push_back(i);
  }

  struct Build {
    fs::path library;
    fs::path temp_library;
    fs::path source;
    fs::path log;
    int pid = -1;
  };
  std::vector<Build> builds(units);
  for (size_t u = 0; u < units; ++u) {
    const std::string hash = content_hash(toolchain_identity() + "\n" + sources[u]);
    Build& b = builds[u];
    b.library = dir / (hash + ".so");
    if (!options.debug_dir.empty()) {
      fs::create_directories(options.debug_dir, ec);
      std::ofstream(fs::path(options.debug_dir) / ("kernels_" + hash + ".cpp")) << sources[u];
    }
    if (fs::exists(b.library)) continue;
    const std::string unique = hash + "-" + std::to_string(getpid()) + "-" + std::to_string(u);
    b.source = dir / ("tmp-" + unique + ".cpp");
    b.temp_library = dir / ("tmp-" + unique + ".so");
    b.log = dir / ("tmp-" + unique + ".log");
    std::ofstream(b.source) << sources[u];
    std::vector<std::string> args = {compiler()};
    for (const char* f : kFlags) args.push_back(f);
    args.push_back(b.source.string());
    args.push_back("-o");
    args.push_back(b.temp_library.string());
    for (const char* f : kLinkFlags) args.push_back(f);
    b.pid = run_process(args, b.log.string());
    USER_CHECK(b.pid > 0) << "cannot run the C++ compiler '" << compiler()
                          << "' (install g++ or set LUMINAL_CXX to a C++17 compiler)";
    ++stats.compiled;
  }
  for (Build& b : builds) {
    if (b.pid < 0) continue;
    const int rc = wait_process(b.pid);
    if (rc != 0) {
      const std::string log = read_file(b.log);
      INTERNAL_ERROR() << "compiling generated kernels failed (exit " << rc << "); source kept at " << b.source.string()
                       << "; please report:\n"
                       << log.substr(0, 4000);
    }
    // Publish atomically: a concurrent process either sees no file or a complete one.
    fs::rename(b.temp_library, b.library, ec);
    INTERNAL_CHECK(!ec) << "cannot move " << b.temp_library.string() << " into the kernel cache: " << ec.message();
    fs::remove(b.source, ec);
    fs::remove(b.log, ec);
  }
  for (size_t u = 0; u < units; ++u) {
    void* handle = dlopen(builds[u].library.c_str(), RTLD_NOW | RTLD_LOCAL);
    INTERNAL_CHECK(handle != nullptr) << "cannot load " << builds[u].library.string() << ": " << dlerror();
    library->handles.push_back(handle);
    for (size_t i : members[u]) {
      void* symbol = dlsym(handle, names[i].c_str());
      INTERNAL_CHECK(symbol != nullptr) << "kernel " << names[i] << " missing from " << builds[u].library.string();
      library->functions.emplace_back(names[i], reinterpret_cast<KernelFn>(symbol));
    }
  }
  stats.translation_units = static_cast<int>(units);
  stats.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return library;
}

}  // namespace luminal::runtime::cpu
