package io.kvrouter.front.testkit;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * An engine of our own whose every answer a test scripts (the real simulated engine, router-sim's, cannot answer 503,
 * reset or hang on demand; router-interop's tests drive the front against it): a vLLM-shaped SSE stream of
 * {@code chunks} events {@code chunkDelay} apart, or an HTTP status, a connection cut before or after the first
 * event, or silence. It records what it was sent. Asked to prefill for a remote decode ({@code kv_transfer_params}
 * with {@code do_remote_decode}, vLLM's two-step protocol), it answers one token and {@code kv_transfer_params}
 * naming itself and the request id, as vLLM's NIXL connector does.
 */
public final class ScriptedEngine implements AutoCloseable {

  /** What the engine does with a request. */
  public enum Mode { STREAM, STATUS, CUT_BEFORE_FIRST, CUT_AFTER_FIRST, STALL_AFTER_FIRST, SILENT }

  /** One request as the engine saw it. */
  public record Seen(String requestId, String dpRank, String authorization, String body) {}

  private final ServerBinding binding;
  private final Materializer materializer;
  private final AtomicReference<Mode> mode = new AtomicReference<>(Mode.STREAM);
  private volatile int status = 503;
  private volatile int chunks = 5;
  private volatile Duration firstDelay = Duration.ZERO;
  private volatile Duration chunkDelay = Duration.ofMillis(5);
  public final ConcurrentLinkedQueue<Seen> seen = new ConcurrentLinkedQueue<>();
  public final AtomicInteger cancelledStreams = new AtomicInteger();

  private ScriptedEngine(ActorSystem<?> system) {
    this.materializer = Materializer.matFromSystem(system);
    this.binding = FrontNode.join(Http.get(Adapter.toClassic(system)).newServerAt("127.0.0.1", 0)
        .bind(this::handle));
  }

  public static ScriptedEngine start(ActorSystem<?> system) {
    return new ScriptedEngine(system);
  }

  public String url() {
    return "http://127.0.0.1:" + binding.localAddress().getPort();
  }

  public ScriptedEngine mode(Mode next) {
    mode.set(next);
    return this;
  }

  public ScriptedEngine status(int code) {
    status = code;
    return mode(Mode.STATUS);
  }

  public ScriptedEngine stream(int count, Duration first, Duration between) {
    chunks = count;
    firstDelay = first;
    chunkDelay = between;
    return mode(Mode.STREAM);
  }

  /** A loopback port nothing listens on (a worker that refuses connections). */
  public static String refusingEndpoint() {
    try (ServerSocket socket = new ServerSocket(0)) {
      return "http://127.0.0.1:" + socket.getLocalPort();
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private java.util.concurrent.CompletionStage<HttpResponse> handle(HttpRequest request) {
    return request.entity().toStrict(5_000, materializer).thenApply(strict -> {
      String body = strict.getData().utf8String();
      seen.add(new Seen(header(request, "x-request-id"), header(request, "x-data-parallel-rank"),
          header(request, "authorization"), body));
      boolean stream = body.contains("\"stream\":true") || body.contains("\"stream\": true");
      return switch (mode.get()) {
        case STATUS -> HttpResponse.create().withStatus(status)
            .withEntity(ContentTypes.APPLICATION_JSON, "{\"error\":{\"message\":\"scripted\",\"code\":" + status + "}}");
        case SILENT -> HttpResponse.create().withEntity(HttpEntities.createChunked(ContentTypes.APPLICATION_JSON,
            Source.<ByteString>never()));
        case CUT_BEFORE_FIRST -> HttpResponse.create().withEntity(HttpEntities.createChunked(
            MediaTypes.TEXT_EVENT_STREAM.toContentType(), Source.failed(new IllegalStateException("cut"))));
        case CUT_AFTER_FIRST -> HttpResponse.create().withEntity(HttpEntities.createChunked(
            MediaTypes.TEXT_EVENT_STREAM.toContentType(), Source.from(List.of(0, 1)).throttle(1, Duration.ofMillis(500))
                .map(i -> {
                  if (i == 1) {
                    throw new IllegalStateException("cut"); // after the first event was written
                  }
                  return event(0);
                })));
        case STALL_AFTER_FIRST -> HttpResponse.create().withEntity(HttpEntities.createChunked(
            MediaTypes.TEXT_EVENT_STREAM.toContentType(), Source.single(event(0)).concat(Source.never())));
        case STREAM -> body.contains("\"do_remote_decode\":true") ? prefilled(header(request, "x-request-id"))
            : stream ? sse() : json();
      };
    });
  }

  private HttpResponse sse() {
    int count = chunks;
    AtomicInteger emitted = new AtomicInteger();
    Source<ByteString, NotUsed> events = Source.range(0, count - 1)
        .map(i -> event(i))
        .throttle(1, chunkDelay)
        .concat(Source.single(ByteString.fromString("data: [DONE]\n\n")))
        .map(chunk -> {
          emitted.incrementAndGet();
          return chunk;
        })
        .watchTermination((mat, done) -> {
          done.whenComplete((ok, failure) -> {
            if (emitted.get() < count + 1) {
              cancelledStreams.incrementAndGet(); // ended before its last event: its client went away
            }
          });
          return mat;
        });
    if (!firstDelay.isZero()) {
      events = events.initialDelay(firstDelay);
    }
    return HttpResponse.create().withEntity(HttpEntities.createChunked(MediaTypes.TEXT_EVENT_STREAM.toContentType(),
        events));
  }

  private HttpResponse json() {
    String answer = "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"ok\","
        + "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}";
    Source<ByteString, NotUsed> body = Source.single(ByteString.fromString(answer));
    if (!firstDelay.isZero()) {
      body = body.initialDelay(firstDelay);
    }
    return HttpResponse.create().withEntity(HttpEntities.createChunked(ContentTypes.APPLICATION_JSON, body));
  }

  private HttpResponse prefilled(String requestId) {
    String answer = "{\"id\":\"cmpl-p\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" p\","
        + "\"finish_reason\":\"length\"}],\"kv_transfer_params\":{\"do_remote_prefill\":true,\"do_remote_decode\":false,"
        + "\"remote_block_ids\":[7,8],\"remote_engine_id\":\"" + url() + "\",\"remote_request_id\":\"" + requestId
        + "\",\"remote_host\":\"127.0.0.1\",\"remote_port\":" + binding.localAddress().getPort() + ",\"tp_size\":1}}";
    return HttpResponse.create().withEntity(ContentTypes.APPLICATION_JSON, answer);
  }

  private static ByteString event(int i) {
    return ByteString.fromString("data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
        + "\"text\":\" t" + i + "\",\"finish_reason\":null}]}\n\n");
  }

  private static String header(HttpRequest request, String name) {
    return request.getHeader(name).map(h -> h.value()).orElse(null);
  }

  public List<Seen> seenList() {
    return List.copyOf(seen);
  }

  @Override
  public void close() {
    binding.terminate(Duration.ofSeconds(2));
  }
}
