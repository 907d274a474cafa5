package io.kvrouter.front.http;

import java.util.List;
import org.apache.pekko.stream.AbruptStageTerminationException;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.SubscriptionWithCancelException;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.util.ByteString;

/**
 * An answer's body as the client gets it, in one stage: the engine's first chunk (already read: it committed the
 * answer), then the rest of the engine's stream as it arrives, each chunk reported to the listener; a failure of the
 * engine's stream is replaced by what the listener says (an SSE error event and {@code [DONE]}) or fails the body;
 * the end of the body (completed, failed, or cancelled by the client) is reported once. It does what
 * {@code Source.single(first).concat(rest.map(..).recoverWithRetries(..)).watchTermination(..)} does, with one stage
 * to build and run per answer instead of five.
 */
final class AnswerStream extends GraphStage<FlowShape<ByteString, ByteString>> {
  /** What the answer reports; called on the stream's thread. */
  interface Listener {
    /** The server started the body (the stage runs). */
    void started();

    /** A chunk after the first one, on its way to the client. */
    void chunk(ByteString chunk);

    /** The engine's stream failed: the chunks sent instead before the body completes, or null to fail the body. */
    List<ByteString> failed(Throwable failure);

    /**
     * The body ended: {@code failure} null when it completed (or the client stopped reading without an error),
     * else why it failed or was cancelled.
     */
    void ended(Throwable failure);
  }

  private final Inlet<ByteString> in = Inlet.create("AnswerStream.in");
  private final Outlet<ByteString> out = Outlet.create("AnswerStream.out");
  private final FlowShape<ByteString, ByteString> shape = FlowShape.of(in, out);
  private final ByteString first;
  private final Listener listener;

  AnswerStream(ByteString first, Listener listener) {
    this.first = first;
    this.listener = listener;
  }

  @Override
  public FlowShape<ByteString, ByteString> shape() {
    return shape;
  }

  @Override
  public GraphStageLogic createLogic(Attributes inheritedAttributes) {
    return new GraphStageLogic(shape) {
      /** The first chunk is still to be sent (the engine's stream is pulled only after it, as concat does). */
      private boolean firstPending = true;
      private boolean endingKnown;
      private Throwable ending;

      {
        setHandler(in, new AbstractInHandler() {
          @Override
          public void onPush() {
            ByteString chunk = grab(in);
            listener.chunk(chunk);
            push(out, chunk);
          }

          @Override
          public void onUpstreamFinish() {
            finish(List.of());
          }

          @Override
          public void onUpstreamFailure(Throwable failure) {
            List<ByteString> instead = listener.failed(failure);
            if (instead == null) {
              end(failure);
              failStage(failure);
            } else {
              finish(instead);
            }
          }
        });
        setHandler(out, new AbstractOutHandler() {
          @Override
          public void onPull() {
            if (firstPending) {
              firstPending = false;
              push(out, first);
            } else {
              pull(in);
            }
          }

          @Override
          public void onDownstreamFinish(Throwable cause) {
            end(cause instanceof SubscriptionWithCancelException.NonFailureCancellation ? null : cause);
            cancelStage(cause);
          }
        });
      }

      /** Sends what is still to be sent (the first chunk if pending, then {@code last}) and completes. */
      private void finish(List<ByteString> last) {
        List<ByteString> rest = last;
        if (firstPending) {
          firstPending = false;
          rest = new java.util.ArrayList<>(last.size() + 1);
          rest.add(first);
          rest.addAll(last);
        }
        emitMultiple(out, rest.iterator(), () -> {
          end(null);
          completeStage();
        });
      }

      private void end(Throwable failure) {
        if (!endingKnown) {
          endingKnown = true;
          ending = failure;
        }
      }

      @Override
      public void preStart() {
        listener.started();
      }

      @Override
      public void postStop() {
        listener.ended(endingKnown ? ending : new AbruptStageTerminationException(this));
      }
    };
  }
}
