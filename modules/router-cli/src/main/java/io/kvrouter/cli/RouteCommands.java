package io.kvrouter.cli;

import com.google.protobuf.MessageOrBuilder;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.Overrides;
import io.kvrouter.api.v1.Disaggregation;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.Scope;
import io.kvrouter.api.v1.SessionMode;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Router service: advisory Select and Book. */
final class RouteCommands {

  private RouteCommands() {}

  enum ScopeArg {
    region(Scope.SCOPE_REGION),
    global(Scope.SCOPE_GLOBAL);

    final Scope proto;

    ScopeArg(Scope proto) {
      this.proto = proto;
    }
  }

  enum DisaggregationArg {
    auto(Disaggregation.DISAGGREGATION_AUTO),
    aggregated(Disaggregation.DISAGGREGATION_AGGREGATED),
    disaggregated(Disaggregation.DISAGGREGATION_DISAGGREGATED);

    final Disaggregation proto;

    DisaggregationArg(Disaggregation proto) {
      this.proto = proto;
    }
  }

  enum SessionModeArg {
    soft(SessionMode.SESSION_MODE_SOFT),
    hard(SessionMode.SESSION_MODE_HARD);

    final SessionMode proto;

    SessionModeArg(SessionMode proto) {
      this.proto = proto;
    }
  }

  /**
   * The options of a RouteRequest. The prompt is given exactly one way: {@code --tokens}, {@code --token-count}
   * (with optional {@code --token-seed}), or {@code --block-hashes} with {@code --isl}.
   */
  static final class RouteOptions {
    @Option(names = "--model", required = true, paramLabel = "MODEL", description = "Model name.") String model;

    @Option(names = "--tokens", paramLabel = "IDS", description = "Prompt token ids, comma-separated: 1,2,3.")
    String tokens;
    @Option(names = "--token-count", paramLabel = "N",
        description = "Generate N deterministic pseudo-random token ids from --token-seed (same seed = shared prefix).")
    Integer tokenCount;
    @Option(names = "--token-seed", paramLabel = "S", description = "Seed for --token-count (default: 0).")
    Long tokenSeed;
    @Option(names = "--vocab-size", paramLabel = "V", description = "Token ids from --token-count fall in [0, V) (default: 32000).")
    Integer vocabSize;
    @Option(names = "--block-hashes", paramLabel = "HASHES",
        description = "Local hash of each full block, comma-separated (decimal or 0x hex): XXH3-64 of the block's "
            + "token ids as little-endian u32, seed 1337 or the salt's seed; one per block, not chained (the router "
            + "chains them). Needs --isl.")
    String blockHashes;
    @Option(names = "--isl", paramLabel = "N", description = "Input length in tokens (required with --block-hashes).")
    Long isl;

    @Option(names = "--expected-output-tokens", paramLabel = "N", description = "Expected output length.")
    Long expectedOutputTokens;
    @Option(names = "--lora-name", paramLabel = "NAME", description = "LoRA adapter name (salts the block hashes;"
        + " only workers with it loaded are candidates, a cold one goes to one worker).")
    String loraName;
    @Option(names = "--cache-salt", paramLabel = "SALT", description = "Cache salt (salts the block hashes).")
    String cacheSalt;
    @Option(names = "--pinned", paramLabel = "W", description = "Route to this worker only.") String pinned;
    @Option(names = "--pinned-rank", paramLabel = "R", description = "This dp rank only: of the --pinned worker, or alone of every worker.") Long pinnedRank;
    @Option(names = "--allowed", paramLabel = "W1,W2", description = "Only these workers are candidates.") String allowed;
    @Option(names = "--excluded", paramLabel = "W1,W2", description = "These workers are never candidates.")
    String excluded;
    @Option(names = "--priority", paramLabel = "N",
        description = "The admission queue's priority jump (FCFS: as if waited N s longer; WSPT: weight 1 + N).")
    Integer priority;
    @Option(names = "--strict-priority", paramLabel = "TIER",
        description = "Book: the admission queue's strict tier, 0 to 65535 (a higher tier leaves first).")
    Integer strictPriority;
    @Option(names = "--policy-class", paramLabel = "CLASS",
        description = "Book: the admission queue class or tenant family.") String policyClass;
    @Option(names = "--retry", paramLabel = "N",
        description = "Book: this send's retry number after a lost answer (0: the first send).") Integer retry;
    @Option(names = "--temperature", paramLabel = "T", description = "Override the policy's temperature.") Double temperature;
    @Option(names = "--overlap-credit", paramLabel = "C", description = "Override the overlap credit.") Double overlapCredit;
    @Option(names = "--prefill-load-scale", paramLabel = "S", description = "Override the prefill load scale.")
    Double prefillLoadScale;
    @Option(names = "--scope", paramLabel = "SCOPE", description = "region | global (default: region).") ScopeArg scope;
    @Option(names = "--required-taints", paramLabel = "T1,T2",
        description = "Only workers carrying every one of these taints are candidates.") String requiredTaints;
    @Option(names = "--preferred-taints", paramLabel = "T1,T2",
        description = "Workers carrying every one of these taints have their cost multiplied.") String preferredTaints;
    @Option(names = "--preferred-taint-multiplier", paramLabel = "M",
        description = "The multiplier of --preferred-taints, in [0, 1] (default: 0.5).") Double preferredMultiplier;
    @Option(names = "--session", paramLabel = "ID",
        description = "Session id: a Book binds it to the rank it books, its later Books keep to it.") String session;
    @Option(names = "--session-mode", paramLabel = "MODE",
        description = "soft | hard (default: the model's session_mode); needs --session.") SessionModeArg sessionMode;
    @Option(names = "--disaggregation", paramLabel = "MODE", description = "auto | aggregated | disaggregated: how"
        + " the model's prefill and decode workers are used (default: auto: a prefill/decode pair when the model has"
        + " both roles).")
    DisaggregationArg disaggregation;

    /** Builds the request; throws IllegalArgumentException on inconsistent options. */
    RouteRequest.Builder toRequest() {
      if (model == null || model.isBlank()) {
        throw new IllegalArgumentException("--model must not be empty");
      }
      RouteRequest.Builder b = RouteRequest.newBuilder().setModel(model.trim());
      int ways = (tokens != null ? 1 : 0) + (tokenCount != null ? 1 : 0) + (blockHashes != null ? 1 : 0);
      if (ways != 1) {
        throw new IllegalArgumentException(
            "give the prompt exactly one way: --tokens IDS | --token-count N [--token-seed S] | --block-hashes HASHES --isl N");
      }
      if ((tokenSeed != null || vocabSize != null) && tokenCount == null) {
        throw new IllegalArgumentException("--token-seed and --vocab-size go with --token-count");
      }
      if (isl != null && blockHashes == null) {
        throw new IllegalArgumentException("--isl goes with --block-hashes (token prompts carry their own length)");
      }
      if (tokens != null) {
        for (int t : Args.parseTokens(tokens)) {
          b.addTokenIds(t);
        }
      } else if (tokenCount != null) {
        if (tokenCount < 1) {
          throw new IllegalArgumentException("--token-count must be >= 1, got " + tokenCount);
        }
        int vocab = vocabSize == null ? TokenGenerator.DEFAULT_VOCAB_SIZE : vocabSize;
        for (int t : TokenGenerator.generate(tokenSeed == null ? 0L : tokenSeed, tokenCount, vocab)) {
          b.addTokenIds(t);
        }
      } else {
        if (isl == null) {
          throw new IllegalArgumentException("--block-hashes needs --isl N (the input length in tokens)");
        }
        for (long h : Args.parseBlockHashes(blockHashes)) {
          b.addBlockHashes(h);
        }
        b.setIslTokens(u32(isl, "--isl"));
      }
      if (expectedOutputTokens != null) {
        b.setExpectedOutputTokens(u32(expectedOutputTokens, "--expected-output-tokens"));
      }
      if (loraName != null) {
        b.setLoraName(loraName);
      }
      if (disaggregation != null) {
        b.setDisaggregation(disaggregation.proto);
      }
      if (cacheSalt != null) {
        b.setCacheSalt(cacheSalt);
      }
      if (pinned != null) {
        b.setPinnedWorker(pinned.trim());
      }
      if (pinnedRank != null) {
        b.setPinnedDpRank(u32(pinnedRank, "--pinned-rank"));
      }
      if (allowed != null) {
        b.addAllAllowedWorkers(Args.parseNames(allowed));
      }
      if (excluded != null) {
        b.addAllExcludedWorkers(Args.parseNames(excluded));
      }
      if (priority != null) {
        b.setPriority(priority);
      }
      if (strictPriority != null) {
        b.setStrictPriority(strictPriority);
      }
      if (policyClass != null) {
        b.setPolicyClass(policyClass);
      }
      if (retry != null) {
        if (retry < 0) {
          throw new IllegalArgumentException("--retry must be 0 or more");
        }
        b.setRetry(retry);
      }
      if (temperature != null || overlapCredit != null || prefillLoadScale != null) {
        Overrides.Builder o = Overrides.newBuilder();
        if (temperature != null) {
          o.setTemperature(finiteNonNegative(temperature, "--temperature"));
        }
        if (overlapCredit != null) {
          o.setOverlapCredit(finiteNonNegative(overlapCredit, "--overlap-credit"));
        }
        if (prefillLoadScale != null) {
          o.setPrefillLoadScale(finiteNonNegative(prefillLoadScale, "--prefill-load-scale"));
        }
        b.setOverrides(o);
      }
      if (scope != null) {
        b.setScope(scope.proto);
      }
      if (requiredTaints != null) {
        b.addAllRequiredTaints(Args.parseNames(requiredTaints));
      }
      if (preferredTaints != null) {
        b.addAllPreferredTaints(Args.parseNames(preferredTaints));
      }
      if (preferredMultiplier != null) {
        if (preferredTaints == null) {
          throw new IllegalArgumentException("--preferred-taint-multiplier goes with --preferred-taints");
        }
        b.setPreferredTaintMultiplier(finiteNonNegative(preferredMultiplier, "--preferred-taint-multiplier"));
      }
      if (sessionMode != null && session == null) {
        throw new IllegalArgumentException("--session-mode goes with --session");
      }
      if (session != null) {
        b.setSessionId(nonBlankOption(session, "--session"));
        if (sessionMode != null) {
          b.setSessionMode(sessionMode.proto);
        }
      }
      return b;
    }

    private static String nonBlankOption(String v, String option) {
      if (v.isBlank()) {
        throw new IllegalArgumentException(option + " must not be empty");
      }
      return v.trim();
    }

    private static int u32(long v, String option) {
      if (v < 0 || v > Args.UINT32_MAX) {
        throw new IllegalArgumentException(option + " must be in 0.." + Args.UINT32_MAX + ", got " + v);
      }
      return (int) v;
    }

    private static double finiteNonNegative(double v, String option) {
      if (!Double.isFinite(v) || v < 0) {
        throw new IllegalArgumentException(option + " must be a finite number >= 0, got " + v);
      }
      return v;
    }
  }

  @Command(name = "select", mixinStandardHelpOptions = true,
      description = "Advisory pick of a worker; books nothing (Router.Select).")
  static final class Select extends ClientCommand {
    @Mixin RouteOptions route;
    @Option(names = "--explain", description = "Ask for this decision's explanation (in the answer's explanation).")
    boolean explain;

    RouteRequest request() {
      return parse(() -> route.toRequest().setExplain(explain).build());
    }

    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      RouteRequest req = request();
      return s -> s.router().select(req);
    }
  }

  @Command(name = "book", mixinStandardHelpOptions = true,
      description = "Pick a worker and book the request onto it until release (Router.Book).")
  static final class Book extends ClientCommand {
    @Mixin RouteOptions route;

    @Option(names = "--request-id", required = true, paramLabel = "ID",
        description = "Request id; booking the same id again while live replays the booking.")
    String requestId;

    @Option(names = "--owner-direct",
        description = "Send the Book to the node that owns the model's admission actor: a Select on --target names "
            + "it (owner_endpoint), the Book goes there, and to --target again (same request id, --retry + 1) when "
            + "that node cannot be reached (UNAVAILABLE without a reason). --release-after releases where it booked. "
            + "Off by default: one Book per invocation costs a Select more than the relay hop it saves.")
    boolean ownerDirect;

    @Option(names = "--release-after",
        description = "Release the booking this call gets. With the request id of a Book whose answer was lost (its "
            + "call timed out or was cancelled just as the router answered), the Book replays that booking "
            + "(replay: true) and this frees it; a fresh booking (replay: false) is freed as well.")
    boolean releaseAfter;

    RouteRequest request() {
      String id = nonBlank(requestId, "--request-id");
      return parse(() -> route.toRequest().setRequestId(id).build());
    }

    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      RouteRequest req = request();
      return s -> (ownerDirect ? OwnerDirect.book(s, req) : s.router().book(req)
          .thenApply(booking -> new OwnerDirect.Booked(booking, s.router())))
          .thenCompose(booked -> !releaseAfter ? CompletableFuture.completedFuture(booked.booking())
              : booked.by().release(BookingRef.newBuilder().setModel(req.getModel())
                  .setRequestId(booked.booking().getRequestId()).setAttempt(booked.booking().getAttempt())
                  .setRegion(booked.booking().getRegion()).build())
                  .thenApply(released -> booked.booking()));
    }
  }
}
