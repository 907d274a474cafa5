package io.kvrouter.cli;

import com.google.protobuf.MessageOrBuilder;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.api.v1.WorkerRegistration;
import io.kvrouter.api.v1.WorkerRole;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Workers service: register and deregister workers. */
final class WorkerCommands {

  private WorkerCommands() {}

  /** CLI spelling of {@link WorkerRole}. */
  enum Role {
    aggregated(WorkerRole.WORKER_ROLE_AGGREGATED),
    prefill(WorkerRole.WORKER_ROLE_PREFILL),
    decode(WorkerRole.WORKER_ROLE_DECODE);

    final WorkerRole proto;

    Role(WorkerRole proto) {
      this.proto = proto;
    }
  }

  @Command(name = "register-worker", mixinStandardHelpOptions = true,
      description = "Register a worker (ranks dp-start .. dp-start+dp-size-1) for a model (Workers.Register).")
  static final class Register extends ClientCommand {
    @Option(names = "--model", required = true, paramLabel = "MODEL", description = "Model name.") String model;
    @Option(names = "--worker", required = true, paramLabel = "WORKER", description = "Worker id.") String worker;
    @Option(names = "--dp-start", defaultValue = "0", description = "First data-parallel rank (default: ${DEFAULT-VALUE}).")
    long dpStart;
    @Option(names = "--dp-size", defaultValue = "1", description = "Number of data-parallel ranks (default: ${DEFAULT-VALUE}).")
    long dpSize;
    @Option(names = "--max-batched-tokens", required = true, paramLabel = "N", description = "Engine's max_num_batched_tokens.")
    long maxBatchedTokens;
    @Option(names = "--kv-blocks", required = true, paramLabel = "N", description = "Total KV cache blocks per rank.")
    long kvBlocks;
    @Option(names = "--block-size", required = true, paramLabel = "N", description = "Tokens per KV block.")
    long blockSize;
    @Option(names = "--endpoint", paramLabel = "URL", description = "Where frontends reach the worker.") String endpoint;
    @Option(names = "--region", paramLabel = "REGION", description = "Region (data center) of the worker.") String region;
    @Option(names = "--role", paramLabel = "ROLE", description = "aggregated | prefill | decode (default: unspecified = aggregated).")
    Role role;
    @Option(names = "--taints", paramLabel = "T1,T2", description = "Placement taints, key or key=value each.")
    String taints;
    @Option(names = "--lora-adapters", paramLabel = "A1,A2", description = "LoRA adapters loaded on the worker,"
        + " comma-separated.")
    String loraAdapters;

    WorkerRegistration request() {
      WorkerRegistration.Builder b = WorkerRegistration.newBuilder()
          .setModel(nonBlank(model, "--model"))
          .setWorkerId(nonBlank(worker, "--worker"))
          .setDpStart(u32(dpStart, "--dp-start", false))
          .setDpSize(u32(dpSize, "--dp-size", true))
          .setMaxNumBatchedTokens(u32(maxBatchedTokens, "--max-batched-tokens", true))
          .setTotalKvBlocks(u32(kvBlocks, "--kv-blocks", true))
          .setBlockSize(u32(blockSize, "--block-size", true));
      if (endpoint != null) {
        b.setEndpoint(endpoint);
      }
      if (region != null) {
        b.setRegion(region);
      }
      if (taints != null) {
        b.addAllTaints(Args.parseNames(taints));
      }
      if (role != null) {
        b.setRole(role.proto);
      }
      if (loraAdapters != null) {
        b.addAllLoraAdapters(Args.parseNames(loraAdapters));
      }
      return b.build();
    }

    private int u32(long v, String option, boolean positive) {
      if (v < (positive ? 1 : 0) || v > Args.UINT32_MAX) {
        throw usage(option + " must be in " + (positive ? 1 : 0) + ".." + Args.UINT32_MAX + ", got " + v);
      }
      return (int) v;
    }

    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      WorkerRegistration req = request();
      return s -> s.workers().register(req);
    }
  }

  @Command(name = "deregister-worker", mixinStandardHelpOptions = true,
      description = "Remove a worker from a model, dropping its live bookings (Workers.Deregister).")
  static final class Deregister extends ClientCommand {
    @Option(names = "--model", required = true, paramLabel = "MODEL", description = "Model name.") String model;
    @Option(names = "--worker", required = true, paramLabel = "WORKER", description = "Worker id.") String worker;

    @Override
    protected Function<CliSession, CompletionStage<? extends MessageOrBuilder>> prepare() {
      WorkerKey req = WorkerKey.newBuilder()
          .setModel(nonBlank(model, "--model"))
          .setWorkerId(nonBlank(worker, "--worker"))
          .build();
      return s -> s.workers().deregister(req);
    }
  }
}
