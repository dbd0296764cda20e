#include "extender/service/request_dispatcher.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

RequestDispatcher::RequestDispatcher(DispatcherOptions options, const Router& router, MetricsRegistry& metrics)
    : options_(std::move(options)),
      router_(router),
      verb_pool_(std::make_unique<RequestPool>("verbs", options_.verb_threads, options_.verb_queue, metrics)),
      bind_pool_(std::make_unique<RequestPool>("bind", options_.bind_threads, options_.bind_queue, metrics)) {}

RequestDispatcher::~RequestDispatcher() {
  bind_pool_.reset();
  verb_pool_.reset();
}

void RequestDispatcher::Handle(HttpRequest request, HttpResponder respond) {
  const std::string_view verb = router_.Verb(request);
  if (verb == "bind") {
    // The deadline counts from now: the wait for a bind thread is part of
    // the time kube-scheduler gives the call.
    const absl::Time deadline = absl::Now() + options_.bind_timeout;
    return Submit(*bind_pool_, "--bind-threads", std::move(request), std::move(respond), deadline);
  }
  const bool heavy = verb == "filter" || verb == "prioritize" || verb == "preempt";
  if (heavy && request.body().size() >= options_.large_body_bytes) {
    return Submit(*verb_pool_, "--threads", std::move(request), std::move(respond), absl::InfiniteFuture());
  }
  respond(router_.Handle(request));
}

void RequestDispatcher::Submit(RequestPool& pool, std::string_view sized_by, HttpRequest request,
                               HttpResponder respond, absl::Time deadline) {
  // Kept to answer if the pool refuses (the task is then destroyed unrun).
  const HttpResponder busy = respond;
  const HttpRequest head{request.method(), request.target(), request.version()};
  const bool accepted =
      pool.TrySubmit([this, request = std::move(request), respond = std::move(respond), deadline]() {
        respond(router_.Handle(request, deadline));
      });
  if (accepted) return;
  busy(router_.Refuse(head, absl::StrCat("Tessera is busy: its ", pool.name(), " threads (", pool.threads(), ", ",
                                        Absl(sized_by), ") are all taken and ", pool.max_queued(),
                                        " more requests wait; kube-scheduler retries the pod")));
}

}  // namespace tessera
