#include "runtime/cpu/jit.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "codegen/cpp/prelude.h"
#include "common/error.h"
#include "common/interrupted.h"
#include "common/warning.h"

extern char** environ;

namespace luminal::runtime::cpu {

namespace fs = std::filesystem;

namespace {

// -ffp-contract=off: no FMA contraction across ops, so a fused chain rounds like eager.
// -fopenmp-simd honours `omp simd` (vectorised reductions, libmvec calls) without an OpenMP
// runtime. --no-as-needed keeps libmvec: dropping it silently would unvectorise nothing but
// fail to load; see research/cpu-baselines.md on inductor losing SIMD this way.
// -mprefer-vector-width=512: GCC's tuning for AVX-512 Xeons vectorises loops in 256 bits, which
// halves the lanes of every exp, sigmoid and division of a pointwise or row kernel; ATen's and
// inductor's kernels use the full width (silu over 1,024 x 4,096 floats: 0.98 -> 0.64 ns an
// element on one core, 2026-12-02). Without AVX-512 (the avx2 ISA included) it changes nothing.
const char* kFlags[] = {"-O3", "-march=native", "-mprefer-vector-width=512", "-fPIC", "-shared", "-std=c++17",
                        "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-w"};
const char* kLinkFlags[] = {"-Wl,--no-as-needed", "-lmvec", "-lm"};

// The flags, after kFlags, that narrow -march=native to `isa`.
std::vector<std::string> isa_flags(CpuIsa isa) {
  if (isa == CpuIsa::Avx2) return {"-mno-avx512f"};  // turns off every AVX-512 extension
  return {};
}

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

std::string read_binary(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Spawns `args` with stdout and stderr to `log_path`; returns the pid, or throws naming why not.
int run_process(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  USER_CHECK(rc == 0) << "cannot run the C++ compiler '" << args[0] << "': " << std::strerror(rc)
                      << " (install g++ or set LUMINAL_CXX to a C++17 compiler)";
  return static_cast<int>(pid);
}

struct ExitStatus {
  int code = -1;   // the exit code when the process exited
  int signal = 0;  // the signal that killed it, else 0
};

ExitStatus wait_process(int pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return {};
  }
  if (WIFSIGNALED(status)) return {-1, WTERMSIG(status)};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0};
}

// A child killed by a signal: Ctrl-C is the user's KeyboardInterrupt, anything else (the OOM
// killer's SIGKILL, a SIGTERM) is named, never reported as a luminal bug.
void report_killed_compiler(int signal) {
  if (signal == SIGINT) throw Interrupted("interrupted while compiling kernels");
  USER_ERROR() << "the C++ compiler '" << compiler() << "' was killed by signal " << signal << " ("
               << strsignal(signal) << ") while compiling kernels"
               << (signal == SIGKILL ? "; out of memory? lower the jobs or free memory and retry" : "");
}

// Writes `text` to `path`, or throws naming the directory and the OS's reason (a read-only or
// full cache directory must not look like a missing compiler).
void write_file(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int error = fd < 0 ? errno : 0;
  for (size_t done = 0; error == 0 && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = n < 0 ? errno : EIO;
    else done += static_cast<size_t>(n);
  }
  if (fd >= 0 && ::close(fd) != 0 && error == 0) error = errno;
  if (error == 0) return;
  std::error_code ec;
  fs::remove(path, ec);
  USER_ERROR() << "cannot write to the kernel cache directory " << path.parent_path().string() << ": "
               << std::strerror(error)
               << " (set the cache_dir option or LUMINAL_CACHE_DIR to a writable directory)";
}

// A published library ends with a trailer: its length and content hash. A truncated, foreign
// or overwritten file fails the check before dlopen maps it (a truncated ELF mapped by dlopen
// is a SIGBUS on first touch). The loader ignores bytes past the ELF's segments.
constexpr char kTrailerMagic[8] = {'L', 'U', 'M', 'K', 'S', 'O', '0', '1'};
constexpr size_t kHashChars = 32;
constexpr size_t kTrailerBytes = sizeof kTrailerMagic + 20 + kHashChars;  // magic, length, hash
// In every entry's hash, so that entries of an older layout (no trailer) are never looked at.
constexpr const char* kEntryFormat = "entry format 2: checksum trailer\n";

std::string trailer_for(const std::string& library_bytes) {
  char length[21];
  std::snprintf(length, sizeof length, "%020zu", library_bytes.size());
  return std::string(kTrailerMagic, sizeof kTrailerMagic) + length + content_hash(library_bytes);
}

// What is wrong with a cache entry, or "" when it is intact.
std::string entry_damage(const fs::path& library) {
  const std::string bytes = read_binary(library);
  if (bytes.size() < kTrailerBytes) return "it is " + std::to_string(bytes.size()) + " bytes, shorter than any entry";
  const std::string trailer = bytes.substr(bytes.size() - kTrailerBytes);
  if (trailer.compare(0, sizeof kTrailerMagic, kTrailerMagic, sizeof kTrailerMagic) != 0)
    return "it does not end with luminal's checksum (truncated, or not written by this version)";
  const std::string body = bytes.substr(0, bytes.size() - kTrailerBytes);
  if (trailer != trailer_for(body)) return "its length or content hash does not match its checksum";
  return "";
}

void fsync_path(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Temp files older than this were left by a process killed mid-build (a build takes seconds
// to minutes): swept once per process and directory.
constexpr auto kStaleTempAge = std::chrono::hours(1);

void sweep_stale_temps(const fs::path& dir) {
  static std::mutex mutex;
  static std::set<std::string> swept;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!swept.insert(dir.string()).second) return;
  }
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("tmp-", 0) != 0) continue;
    std::error_code time_ec;
    const auto written = fs::last_write_time(it->path(), time_ec);
    if (!time_ec && now - written > kStaleTempAge) fs::remove(it->path(), time_ec);
  }
}

// AMX-BF16, CPUID.(EAX=7, ECX=0):EDX bit 22, read directly: clang's __builtin_cpu_supports does
// not know "amx-bf16" (the fuzz build, clang, failed on it).
bool cpu_has_amx_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx >> 22 & 1u) != 0;
}

}  // namespace

CpuIsa parse_cpu_isa(const std::string& name) {
  if (name == "native") return CpuIsa::Native;
  if (name == "avx2") return CpuIsa::Avx2;
  USER_ERROR() << "luminal option 'cpu_isa' must be 'native' or 'avx2', got '" << name << "'";
}

bool kernels_have_bf16_pairs_without_amx(CpuIsa isa) {
  // -march=native gives the kernels every extension the CPU reports.
  return isa == CpuIsa::Native && __builtin_cpu_supports("avx512bf16") && !cpu_has_amx_bf16();
}

bool kernels_have_amx_bf16(CpuIsa isa) {
  // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA (arch/x86/include/uapi/asm/prctl.h): the process's
  // threads may then use the tiles. Granted once per process; asking again is harmless.
  static const bool permitted = [] {
    constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return cpu_has_amx_bf16() && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return isa == CpuIsa::Native && __builtin_cpu_supports("avx512bf16") && permitted;
}

bool kernels_have_zen5_avx512(CpuIsa isa) {
  // CPUID.1:EAX: the family is the base family (bits 8-11) plus the extended one (bits 20-27)
  // where the base is 0Fh.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (isa != CpuIsa::Native || !__builtin_cpu_is("amd") || !__builtin_cpu_supports("avx512f") ||
      !__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    return false;
  const unsigned base = eax >> 8 & 0xFu, family = base == 0xFu ? base + (eax >> 20 & 0xFFu) : base;
  return family >= 0x1Au;
}

bool kernels_multiply_bf16_pairs(CpuIsa isa) {
  return kernels_have_bf16_pairs_without_amx(isa) || kernels_have_amx_bf16(isa);
}

// A kernel built with -march=native on another machine must not be loaded here.
const std::string& toolchain_identity(CpuIsa isa) {
  static const std::string native = [] {
    std::string id = compiler();
    const fs::path tmp = fs::temp_directory_path() / ("luminal-cxx-version-" + std::to_string(getpid()));
    try {
      const int pid = run_process({compiler(), "-dumpfullversion", "-dumpmachine"}, tmp.string());
      if (wait_process(pid).code == 0) id += " " + read_binary(tmp);
    } catch (const Error&) {
      // No compiler: the identity still covers the CPU, and building kernels will say why.
    }
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
  static const std::string avx2 = [] {
    std::string id = native;
    for (const std::string& f : isa_flags(CpuIsa::Avx2)) id += " " + f;
    return id;
  }();
  return isa == CpuIsa::Avx2 ? avx2 : native;
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

namespace {

// One translation unit's way into the cache: built by a compiler process into temp files,
// then published under its content hash.
struct Build {
  fs::path library;
  fs::path temp_library;
  fs::path source;
  fs::path log;
  int pid = -1;
};

// Every compiler process started, until each is waited for and its temp files are gone, even
// when an error or Ctrl-C unwinds the build half-way.
class Builds {
 public:
  explicit Builds(size_t units) : builds_(units) {}
  ~Builds() {
    for (Build& b : builds_) {
      if (b.pid > 0) {
        ::kill(b.pid, SIGTERM);
        wait_process(b.pid);
      }
      remove_temps(b);
    }
  }
  Build& operator[](size_t u) { return builds_[u]; }

  void start(size_t u, const fs::path& dir, const std::string& hash, const std::string& source, CpuIsa isa) {
    Build& b = builds_[u];
    const std::string unique = hash + "-" + std::to_string(getpid()) + "-" + std::to_string(u);
    b.source = dir / ("tmp-" + unique + ".cpp");
    b.temp_library = dir / ("tmp-" + unique + ".so");
    b.log = dir / ("tmp-" + unique + ".log");
    write_file(b.source, source);
    std::vector<std::string> args = {compiler()};
    for (const char* f : kFlags) args.push_back(f);
    for (const std::string& f : isa_flags(isa)) args.push_back(f);
    args.push_back(b.source.string());
    args.push_back("-o");
    args.push_back(b.temp_library.string());
    for (const char* f : kLinkFlags) args.push_back(f);
    b.pid = run_process(args, b.log.string());
  }

  // Waits for every started build and publishes its library; the first failure throws (the
  // destructor stops the others).
  void finish() {
    for (Build& b : builds_) {
      if (b.pid < 0) continue;
      const ExitStatus status = wait_process(b.pid);
      b.pid = -1;
      if (status.signal != 0) report_killed_compiler(status.signal);
      if (status.code != 0) {
        // The source is kept for the report; the sweep of stale temps removes it later.
        const fs::path kept = b.source;
        b.source.clear();
        INTERNAL_ERROR() << "compiling generated kernels failed (exit " << status.code << "); source kept at "
                         << kept.string() << "; please report:\n"
                         << read_binary(b.log).substr(0, 4000);
      }
      publish(b);
      remove_temps(b);
    }
  }

 private:
  // Appends the checksum trailer, flushes it to disk, then renames: a concurrent process, or
  // this one after a crash or power loss, sees no entry or a complete one.
  static void publish(Build& b) {
    std::string bytes = read_binary(b.temp_library);
    USER_CHECK(!bytes.empty()) << "the C++ compiler wrote no library at " << b.temp_library.string();
    const std::string trailer = trailer_for(bytes);
    {
      std::ofstream out(b.temp_library, std::ios::binary | std::ios::app);
      out << trailer;
      USER_CHECK(out.good()) << "cannot write to the kernel cache directory " << b.library.parent_path().string()
                             << ": " << std::strerror(errno);
    }
    fsync_path(b.temp_library, O_RDONLY);
    std::error_code ec;
    fs::rename(b.temp_library, b.library, ec);
    USER_CHECK(!ec) << "cannot move " << b.temp_library.string() << " into the kernel cache: " << ec.message();
    fsync_path(b.library.parent_path(), O_RDONLY | O_DIRECTORY);
  }

  static void remove_temps(Build& b) {
    std::error_code ec;
    for (fs::path* path : {&b.source, &b.temp_library, &b.log})
      if (!path->empty()) fs::remove(*path, ec);
  }

  std::vector<Build> builds_;
};

}  // namespace

std::shared_ptr<KernelLibrary> build_kernels(const std::vector<std::string>& names, const std::vector<std::string>& functions,
                                             const JitOptions& options, JitStats& stats) {
  const auto start = std::chrono::steady_clock::now();
  auto library = std::make_shared<KernelLibrary>();
  if (names.empty()) return library;
  const fs::path dir = fs::path(options.cache_dir.empty() ? default_cache_dir() : options.cache_dir) / "cpu";
  std::error_code ec;
  fs::create_directories(dir, ec);
  USER_CHECK(!ec) << "cannot create the kernel cache directory " << dir.string() << ": " << ec.message()
                  << " (set the cache_dir option or LUMINAL_CACHE_DIR to a writable directory)";
  sweep_stale_temps(dir);

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

  Builds builds(units);
  std::vector<std::string> hashes(units);
  std::vector<bool> built_now(units, false);
  for (size_t u = 0; u < units; ++u) {
    hashes[u] = content_hash(std::string(kEntryFormat) + toolchain_identity(options.isa) + "\n" + sources[u]);
    builds[u].library = dir / (hashes[u] + ".so");
    if (!options.debug_dir.empty()) {
      fs::create_directories(options.debug_dir, ec);
      std::ofstream(fs::path(options.debug_dir) / ("kernels_" + hashes[u] + ".cpp")) << sources[u];
    }
    if (fs::exists(builds[u].library)) {
      const std::string damage = entry_damage(builds[u].library);
      if (damage.empty()) continue;
      warn("the kernel cache entry " + builds[u].library.string() + " is damaged (" + damage + "); rebuilding it");
      fs::remove(builds[u].library, ec);
    }
    builds.start(u, dir, hashes[u], sources[u], options.isa);
    built_now[u] = true;
    ++stats.compiled;
  }
  builds.finish();
  for (size_t u = 0; u < units; ++u) {
    const fs::path& path = builds[u].library;
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr && !built_now[u]) {
      // Intact but unloadable (a library built against another libc, say): rebuilt once.
      warn("the kernel cache entry " + path.string() + " cannot be loaded (" + dlerror() + "); rebuilding it");
      fs::remove(path, ec);
      builds.start(u, dir, hashes[u], sources[u], options.isa);
      builds.finish();
      ++stats.compiled;
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    USER_CHECK(handle != nullptr) << "cannot load the kernel library " << path.string() << ": " << dlerror()
                                  << " (is the cache directory on a noexec filesystem? set the cache_dir option or "
                                     "LUMINAL_CACHE_DIR to another directory)";
    library->handles.push_back(handle);
    for (size_t i : members[u]) {
      void* symbol = dlsym(handle, names[i].c_str());
      INTERNAL_CHECK(symbol != nullptr) << "kernel " << names[i] << " missing from " << path.string();
      library->functions.emplace_back(names[i], reinterpret_cast<KernelFn>(symbol));
    }
  }
  stats.translation_units = static_cast<int>(units);
  stats.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return library;
}

}  // namespace luminal::runtime::cpu
