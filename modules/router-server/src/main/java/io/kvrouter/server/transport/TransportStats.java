package io.kvrouter.server.transport;

import java.util.concurrent.atomic.LongAdder;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;

/**
 * Per-node counters of how gRPC calls were served, read by tests and benchmarks via {@link #get(ActorSystem)}.
 * On PEKKO_FAST every request to the gRPC port counts once: as a fast-path call or as a stock-handler call.
 */
public final class TransportStats implements Extension {
  private static final ExtensionId<TransportStats> ID = new ExtensionId<>() {
    @Override
    public TransportStats createExtension(ActorSystem<?> system) {
      return new TransportStats();
    }
  };

  final LongAdder fastPath = new LongAdder();
  final LongAdder stock = new LongAdder();

  private TransportStats() {}

  public static TransportStats get(ActorSystem<?> system) {
    return ID.apply(system);
  }

  /** Unary kvrouter calls answered by the PEKKO_FAST binding's own handler. */
  public long fastPathCalls() {
    return fastPath.sum();
  }

  /** Calls the PEKKO_FAST binding handed to Pekko gRPC's stock handlers. */
  public long stockCalls() {
    return stock.sum();
  }

  @Override
  public String toString() {
    return "fast path " + fastPathCalls() + ", stock " + stockCalls();
  }
}
