#include "extender/control_loop.h"

#include <chrono>
#include <csignal>
#include <thread>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "scheduler/common/thread_name.h"

namespace tessera {

struct ControlLoop::State {
  explicit State(ControlActions a) : actions(std::move(a)) {}

  // Re-arms `timer` every `every`, calling `action` each time, until cancelled.
  void Every(boost::asio::steady_timer& timer, absl::Duration every, const std::function<void()>& action) {
    if (!action || every <= absl::ZeroDuration()) return;
    timer.expires_after(std::chrono::milliseconds(absl::ToInt64Milliseconds(every)));
    timer.async_wait([this, &timer, every, &action](const boost::system::error_code& ec) {
      if (ec) return;
      action();
      Every(timer, every, action);
    });
  }

  void WaitHup() {
    hup.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      if (actions.on_hup) actions.on_hup();
      WaitHup();
    });
  }

  void Start() {
    stop_signals.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      if (actions.on_stop) actions.on_stop(signal);
      hup.cancel();
      poll.cancel();
      chore.cancel();
    });
    WaitHup();
    Every(poll, actions.poll_every, actions.on_poll);
    Every(chore, actions.chore_every, actions.on_chore);
    thread = std::thread([this] {
      NameThisThread("control-loop");
      io.run();
    });
  }

  ControlActions actions;
  boost::asio::io_context io;
  boost::asio::signal_set stop_signals{io, SIGTERM, SIGINT};
  boost::asio::signal_set hup{io, SIGHUP};
  boost::asio::steady_timer poll{io};
  boost::asio::steady_timer chore{io};
  std::thread thread;
};

ControlLoop::ControlLoop(ControlActions actions) : state_(std::make_unique<State>(std::move(actions))) {
  state_->Start();
}

ControlLoop::~ControlLoop() {
  state_->io.stop();
  state_->thread.join();
}

}  // namespace tessera
