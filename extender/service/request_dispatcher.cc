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
    Router::Rest rest = router_.StartBind(request, deadline);  // reserves now
    return Submit(*bind_pool_, "--bind-threads", request, std::move(rest), std::move(respond));
  }
  const bool heavy = verb == "filter" || verb == "prioritize" || verb == "preempt";
  // The GPU map reads the whole snapshot (milliseconds at 5000 nodes): not
  // on an I/O thread either.
  if ((heavy && request.body().size() >= options_.large_body_bytes) || verb == "ui") {
    HttpRequest head{request.method(), request.target(), request.version()};
    Router::Rest work = [this, request = std::move(request)] { return router_.Handle(request); };
    return Submit(*verb_pool_, "--threads", head, std::move(work), std::move(respond));
  }
  respond(router_.Handle(request));
}

void RequestDispatcher::Submit(RequestPool& pool, std::string_view sized_by, const HttpRequest& request,
                               Router::Rest work, HttpResponder respond) {
  const HttpResponder busy = respond;  // to answer if the pool refuses
  if (pool.TrySubmit([work = std::move(work), respond = std::move(respond)]() mutable { respond(work()); })) return;
  busy(router_.Refuse(request, absl::StrCat("Tessera is busy: its ", pool.name(), " threads (", pool.threads(), ", ",
                                           Absl(sized_by), ") are all taken and ", pool.max_queued(),
                                           " more requests wait; kube-scheduler retries the pod")));
}

}  // namespace tessera
