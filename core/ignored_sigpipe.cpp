#include <fulgur/core/ignored_sigpipe.hpp>

#include <csignal>
#include <mutex>

namespace fulgur {
namespace {

std::mutex g_sigpipe_mutex;
int g_sigpipe_holders = 0;
bool g_sigpipe_changed = false;  // the first holder found the default and ignored it
struct sigaction g_sigpipe_found {};

}  // namespace

IgnoredSigpipe::IgnoredSigpipe() {
  const std::lock_guard lock(g_sigpipe_mutex);
  if (g_sigpipe_holders++ > 0) return;
  g_sigpipe_changed = false;
  if (::sigaction(SIGPIPE, nullptr, &g_sigpipe_found) != 0) return;
  if ((g_sigpipe_found.sa_flags & SA_SIGINFO) == 0 && g_sigpipe_found.sa_handler == SIG_DFL) {
    struct sigaction ignore = g_sigpipe_found;
    ignore.sa_handler = SIG_IGN;
    g_sigpipe_changed = ::sigaction(SIGPIPE, &ignore, nullptr) == 0;
  }
}

IgnoredSigpipe::~IgnoredSigpipe() {
  const std::lock_guard lock(g_sigpipe_mutex);
  if (--g_sigpipe_holders > 0 || !g_sigpipe_changed) return;
  ::sigaction(SIGPIPE, &g_sigpipe_found, nullptr);
  g_sigpipe_changed = false;
}

}  // namespace fulgur
