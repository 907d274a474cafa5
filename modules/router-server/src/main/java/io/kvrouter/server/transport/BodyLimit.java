package io.kvrouter.server.transport;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.scaladsl.model.EntityStreamSizeException;
import org.apache.pekko.japi.function.Function;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import scala.Option;

/**
 * Enforces the request size limit on our unary services. The whole body is read before answering, even past the
 * limit: a server that answers while the client is still sending resets the stream, and clients then report
 * CANCELLED instead of our RESOURCE_EXHAUSTED. An over-limit body reaches the handler as an entity that fails with
 * {@link EntityStreamSizeException}, which {@link io.kvrouter.server.grpc.StatusMapping} maps. Streaming services (reflection, health watch)
 * pass through untouched.
 */
final class BodyLimit {
  /** gRPC's length-prefixed framing: a flag byte and a 4-byte length before the message. */
  private static final int FRAME_PREFIX = 5;
  private final long messageLimit;
  private final long limit;
  private final Materializer materializer;

  /** Bodies up to one framed message of {@code messageLimit} bytes pass. */
  BodyLimit(ActorSystem<?> system, long messageLimit) {
    this.messageLimit = messageLimit;
    this.limit = messageLimit + FRAME_PREFIX;
    this.materializer = Materializer.matFromSystem(system);
  }

  Function<HttpRequest, CompletionStage<HttpResponse>> around(String servicePathPrefix,
      Function<HttpRequest, CompletionStage<HttpResponse>> handler) {
    return request -> {
      if (!request.getUri().path().startsWith(servicePathPrefix)) {
        return handler.apply(request);
      }
      HttpEntity entity = request.entity();
      if (entity instanceof HttpEntity.Strict strict) {
        return handler.apply(strict.getData().size() > limit ? withTooLarge(request, strict.getData().size())
            : request);
      }
      return entity.getDataBytes()
          .runWith(Sink.fold(new Collected(), Collected::add), materializer)
          .thenCompose(collected -> {
            try {
              return handler.apply(collected.size > limit ? withTooLarge(request, collected.size)
                  : request.withEntity(HttpEntities.create(entity.getContentType(), collected.bytes)));
            } catch (Exception e) {
              return CompletableFuture.failedFuture(e);
            }
          });
    };
  }

  private HttpRequest withTooLarge(HttpRequest request, long actual) {
    return request.withEntity(HttpEntities.create(request.entity().getContentType(),
        Source.<ByteString>failed(new EntityStreamSizeException(messageLimit,
            Option.apply(actual - FRAME_PREFIX)))));
  }

  /** Keeps bytes up to the limit and only counts the rest. */
  private final class Collected {
    ByteString bytes = ByteString.emptyByteString();
    long size;

    Collected add(ByteString chunk) {
      size += chunk.size();
      if (size <= limit) {
        bytes = bytes.concat(chunk);
      } else {
        bytes = ByteString.emptyByteString();
      }
      return this;
    }
  }
}
