package io.kvrouter.server.transport;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap;
import io.kvrouter.api.health.v1.HealthCheckRequest;
import io.kvrouter.api.health.v1.HealthCheckResponse;
import io.kvrouter.api.health.v1.HealthGrpc;
import io.kvrouter.api.v1.AdminGrpc;
import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.Deregistered;
import io.kvrouter.api.v1.ExplainReply;
import io.kvrouter.api.v1.ExplainRequest;
import io.kvrouter.api.v1.KvEventAck;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.ListModelsRequest;
import io.kvrouter.api.v1.LoadAck;
import io.kvrouter.api.v1.LoadReport;
import io.kvrouter.api.v1.ModelList;
import io.kvrouter.api.v1.ModelState;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.PolicySet;
import io.kvrouter.api.v1.PrefillMarked;
import io.kvrouter.api.v1.Registered;
import io.kvrouter.api.v1.Released;
import io.kvrouter.api.v1.Renewed;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.Selection;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkersGrpc;
import io.kvrouter.server.grpc.AbandonableAnswer;
import io.kvrouter.server.grpc.StatusMapping;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The generated grpc-java service interfaces, each method one call into the same service objects the PEKKO binding
 * serves. The request metadata they get is {@link CallMetadata} (the call's deadline as {@code grpc-timeout}); a call
 * the client cancels (or whose deadline grpc-java ends) cancels the returned stage, so an abandoned Book frees what
 * it booked.
 */
final class NettyCalls implements RouterGrpc.AsyncService, WorkersGrpc.AsyncService, AdminGrpc.AsyncService,
    HealthGrpc.AsyncService {
  private static final Logger log = LoggerFactory.getLogger(NettyCalls.class);

  private final ActorSystem<?> system;
  private final GrpcServices services;
  private final Materializer materializer;

  NettyCalls(ActorSystem<?> system, GrpcServices services) {
    this.system = system;
    this.services = services;
    this.materializer = Materializer.matFromSystem(system);
  }

  @Override
  public void select(RouteRequest in, StreamObserver<Selection> out) {
    answer(out, services.router().select(in, CallMetadata.current()));
  }

  @Override
  public void book(RouteRequest in, StreamObserver<Booking> out) {
    answer(out, services.router().book(in, CallMetadata.current()), LateCancels.current());
  }

  @Override
  public void release(BookingRef in, StreamObserver<Released> out) {
    answer(out, services.router().release(in, CallMetadata.current()));
  }

  @Override
  public void markPrefillDone(BookingRef in, StreamObserver<PrefillMarked> out) {
    answer(out, services.router().markPrefillDone(in, CallMetadata.current()));
  }

  @Override
  public void renew(BookingRef in, StreamObserver<Renewed> out) {
    answer(out, services.router().renew(in, CallMetadata.current()));
  }

  @Override
  public void register(WorkerRegistration in, StreamObserver<Registered> out) {
    answer(out, services.workers().register(in, CallMetadata.current()));
  }

  @Override
  public void deregister(WorkerKey in, StreamObserver<Deregistered> out) {
    answer(out, services.workers().deregister(in, CallMetadata.current()));
  }

  @Override
  public void reportLoad(LoadReport in, StreamObserver<LoadAck> out) {
    answer(out, services.workers().reportLoad(in, CallMetadata.current()));
  }

  @Override
  public void publishKvEvents(KvEventBatch in, StreamObserver<KvEventAck> out) {
    answer(out, services.workers().publishKvEvents(in, CallMetadata.current()));
  }

  @Override
  public void setPolicy(SetPolicyRequest in, StreamObserver<PolicySet> out) {
    answer(out, services.admin().setPolicy(in, CallMetadata.current()));
  }

  @Override
  public void getModelState(ModelStateRequest in, StreamObserver<ModelState> out) {
    answer(out, services.admin().getModelState(in, CallMetadata.current()));
  }

  @Override
  public void explainRecent(ExplainRequest in, StreamObserver<ExplainReply> out) {
    answer(out, services.admin().explainRecent(in, CallMetadata.current()));
  }

  @Override
  public void listModels(ListModelsRequest in, StreamObserver<ModelList> out) {
    answer(out, services.admin().listModels(in, CallMetadata.current()));
  }

  @Override
  public void check(HealthCheckRequest in, StreamObserver<HealthCheckResponse> out) {
    answer(out, services.health().check(in, CallMetadata.current()));
  }

  /** Runs the same status stream as the PEKKO binding into the call, until the client goes away. */
  @Override
  public void watch(HealthCheckRequest in, StreamObserver<HealthCheckResponse> out) {
    ServerCallStreamObserver<HealthCheckResponse> call = (ServerCallStreamObserver<HealthCheckResponse>) out;
    SharedKillSwitch stop = KillSwitches.shared("kvrouter-health-watch");
    call.setOnCancelHandler(stop::shutdown);
    services.health().watch(in, CallMetadata.current()).via(stop.flow())
        .runWith(Sink.foreach(call::onNext), materializer)
        .whenComplete((done, failure) -> reply(call, null, failure));
  }

  /**
   * Answers when the stage completes; a call cancelled first cancels the stage, or abandons it (a Book): then what it
   * booked is freed even when the answer was complete but not yet written. An answer completed elsewhere (the
   * admission actor's thread) is encoded and written on the call's own event loop: the actor's thread is free for its
   * next command sooner, and netty writes from its own thread directly. One already complete (Select) is answered
   * right here. A Book answered on a connection {@link LateCancels} watches stays abandonable for a short while
   * after its answer was written: a cancel that crossed the answer on the wire still frees it.
   */
  private <Resp> void answer(StreamObserver<Resp> out, CompletionStage<Resp> stage) {
    answer(out, stage, null);
  }

  private <Resp> void answer(StreamObserver<Resp> out, CompletionStage<Resp> stage, LateCancels.CallStream stream) {
    ServerCallStreamObserver<Resp> call = (ServerCallStreamObserver<Resp>) out;
    CompletableFuture<Resp> answer = stage.toCompletableFuture();
    Runnable lateCancelWatch = null;
    if (answer instanceof AbandonableAnswer<Resp> abandonable) {
      call.setOnCancelHandler(abandonable::abandon);
      if (call.isCancelled()) {
        abandonable.abandon();
      }
      if (stream != null) {
        lateCancelWatch = () -> stream.answered(abandonable::abandon);
      }
    } else if (!answer.isDone()) {
      call.setOnCancelHandler(() -> answer.cancel(false));
    }
    Runnable written = lateCancelWatch;
    EventExecutor loop = ThreadExecutorMap.currentExecutor();
    answer.whenComplete((response, failure) -> {
      if (loop == null || loop.inEventLoop()) {
        reply(call, response, failure, written);
      } else {
        loop.execute(() -> reply(call, response, failure, written));
      }
    });
  }

  /** Sends the answer (a unary call's response; null for the end of a stream) or the failure's status. */
  private <Resp> void reply(ServerCallStreamObserver<Resp> call, Resp response, Throwable failure) {
    reply(call, response, failure, null);
  }

  /** ... and runs {@code written} (if any) once a response was handed to grpc-java. */
  private <Resp> void reply(ServerCallStreamObserver<Resp> call, Resp response, Throwable failure,
      Runnable written) {
    if (call.isCancelled()) {
      return;
    }
    try {
      if (failure != null) {
        call.onError(StatusMapping.toStatusException(failure, system.classicSystem()));
        return;
      }
      if (response != null) {
        call.onNext(response);
      }
      call.onCompleted();
      if (written != null) {
        written.run();
      }
    } catch (RuntimeException e) {
      log.debug("gRPC call ended before its answer", e);
    }
  }
}
