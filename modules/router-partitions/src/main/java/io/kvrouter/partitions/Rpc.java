package io.kvrouter.partitions;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvrouter.api.ReasonTrailer;
import io.kvrouter.api.v1.AdminGrpc;
import io.kvrouter.api.v1.RouterGrpc;
import io.kvrouter.api.v1.WorkersGrpc;
import java.net.ConnectException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/** grpc-java channels to every node's gRPC port (router-api's generated stubs), one per node. */
public final class Rpc implements AutoCloseable {
  /** Refusals after which nothing was booked or changed: the call is FAIL, not INFO. */
  private static final Set<String> DEFINITE_REASONS = Set.of("ALL_WORKERS_OVERLOADED", "RECOVERING", "NO_ENDPOINTS",
      "QUEUE_LIMIT", "UNKNOWN_MODEL", "MODEL_NOT_IN_REGION", "DEADLINE_TOO_SHORT", "PINNED_WORKER_OVERLOADED",
      "UNKNOWN_WORKER");

  private final Map<Integer, ManagedChannel> channels = new HashMap<>();

  public Rpc(List<Integer> nodes) {
    for (int node : nodes) {
      channels.put(node, NettyChannelBuilder.forAddress(Net.ip(node), Net.GRPC_PORT).usePlaintext()
          .keepAliveTime(30, TimeUnit.SECONDS).build());
    }
  }

  public RouterGrpc.RouterBlockingStub router(int node, long timeoutMs) {
    return RouterGrpc.newBlockingStub(channels.get(node)).withDeadlineAfter(timeoutMs, TimeUnit.MILLISECONDS);
  }

  public WorkersGrpc.WorkersBlockingStub workers(int node, long timeoutMs) {
    return WorkersGrpc.newBlockingStub(channels.get(node)).withDeadlineAfter(timeoutMs, TimeUnit.MILLISECONDS);
  }

  public AdminGrpc.AdminBlockingStub admin(int node, long timeoutMs) {
    return AdminGrpc.newBlockingStub(channels.get(node)).withDeadlineAfter(timeoutMs, TimeUnit.MILLISECONDS);
  }

  /** "CODE REASON" of a failed call. */
  public static String error(StatusRuntimeException e) {
    String reason = ReasonTrailer.of(e.getTrailers());
    if (reason == null && refused(e)) {
      reason = "(connection refused)";
    }
    return e.getStatus().getCode() + (reason == null ? "" : " " + reason);
  }

  private static boolean refused(StatusRuntimeException e) {
    for (Throwable c = e.getStatus().getCause(); c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof ConnectException) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a failed call certainly changed nothing: a refusal with one of the definite reasons, or a call that
   * never left the client because no connection to the node could be made (its node is down: the connect was
   * refused), which grpc-java reports as UNAVAILABLE caused by a {@link ConnectException}.
   */
  public static boolean definite(StatusRuntimeException e) {
    String reason = ReasonTrailer.of(e.getTrailers());
    Status.Code code = e.getStatus().getCode();
    if (code == Status.Code.UNAVAILABLE && reason == null && refused(e)) {
      return true;
    }
    return (reason != null && DEFINITE_REASONS.contains(reason.trim()))
        || code == Status.Code.INVALID_ARGUMENT || code == Status.Code.NOT_FOUND
        || code == Status.Code.FAILED_PRECONDITION;
  }

  @Override
  public void close() {
    for (ManagedChannel c : channels.values()) {
      c.shutdownNow();
    }
    for (ManagedChannel c : channels.values()) {
      try {
        c.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
