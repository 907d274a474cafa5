package io.kvrouter.cli;

import com.google.protobuf.MessageOrBuilder;
import io.kvrouter.api.v1.BookingRef;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Router service: calls on an existing booking, fenced by (request id, attempt). */
final class BookingCommands {

  private BookingCommands() {}

  abstract static class RefCommand extends ClientCommand {
    @Option(names = "--model", required = true, paramLabel = "MODEL", description = "Model name.") String model;
    @Option(names = "--request-id", required = true, paramLabel = "ID", description = "The booked request id.")
    String requestId;
    @Option(names = "--attempt", required = true, paramLabel = "A",
        description = "The booking's attempt (fencing token) from the book answer.")
    String attempt;
    @Option(names = "--region", paramLabel = "REGION",
        description = "The booking's region, as the book answer gives it (default: the region of the router called).")
    String region;

    BookingRef ref() {
      BookingRef.Builder ref = BookingRef.newBuilder()
          .setModel(nonBlank(model, "--model"))
          .setRequestId(nonBlank(requestId, "--request-id"))
          .setAttempt(parse(() -> Args.parseUnsigned64(attempt, "--attempt")));
      if (region != null) {
        ref.setRegion(region.trim());
      }
      return ref.build();
    }
  }

  @Command(name = "release", mixinStandardHelpOptions = true,
      description = "Free a booking (Router.Release; idempotent: applied=false when unknown or already released).")
  static final class Release extends RefCommand {
    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      BookingRef ref = ref();
      return s -> s.router().release(ref);
    }
  }

  @Command(name = "mark-prefill-done", mixinStandardHelpOptions = true,
      description = "Drop a booking's prefill load, keep its blocks, renew its lease (Router.MarkPrefillDone).")
  static final class MarkPrefillDone extends RefCommand {
    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      BookingRef ref = ref();
      return s -> s.router().markPrefillDone(ref);
    }
  }

  @Command(name = "renew", mixinStandardHelpOptions = true,
      description = "Renew a booking's lease (Router.Renew).")
  static final class Renew extends RefCommand {
    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      BookingRef ref = ref();
      return s -> s.router().renew(ref);
    }
  }
}
