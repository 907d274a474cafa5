package io.kvrouter.cluster.architecture;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * router-cluster's packages by concept form no cycle; the admission actor is the top of them (only the node's wiring
 * in the root package sits above it): replication, regions, KV events and the model slots never reach into it.
 */
class ClusterArchitectureTest {
  private static final JavaClasses CLUSTER = new ClassFileImporter()
      .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
      .importPackages("io.kvrouter.cluster");

  @Test
  void conceptPackagesAreFreeOfCycles() {
    slices().matching("io.kvrouter.cluster.(*)..").should().beFreeOfCycles().check(CLUSTER);
  }

  @Test
  void replicationRegionsKvEventsAndSlotsDoNotReachIntoAdmission() {
    noClasses().that().resideInAnyPackage("io.kvrouter.cluster.replication..", "io.kvrouter.cluster.regions..",
            "io.kvrouter.cluster.kvevents..", "io.kvrouter.cluster.models..", "io.kvrouter.cluster.explain..")
        .should().dependOnClassesThat().resideInAPackage("io.kvrouter.cluster.admission..")
        .check(CLUSTER);
  }

  @Test
  void theModelSlotsDependOnNoOtherConcept() {
    noClasses().that().resideInAPackage("io.kvrouter.cluster.models..")
        .should().dependOnClassesThat().resideInAnyPackage("io.kvrouter.cluster.replication..",
            "io.kvrouter.cluster.regions..", "io.kvrouter.cluster.kvevents..", "io.kvrouter.cluster.explain..")
        .check(CLUSTER);
  }

  @Test
  void onlyTheWiringLivesInTheRootPackage() {
    noClasses().that().resideInAPackage("io.kvrouter.cluster.(*)..")
        .should().dependOnClassesThat().resideInAPackage("io.kvrouter.cluster")
        .check(CLUSTER);
  }

  @Test
  void theClusterLayerKnowsNoTransport() {
    noClasses().should().dependOnClassesThat()
        .resideInAnyPackage("io.kvrouter.server..", "io.kvrouter.api..", "io.grpc..")
        .check(CLUSTER);
  }

  /**
   * Protobuf is the format of the two hot wires between nodes, replication and relayed calls: only their serializers,
   * what those share, and the generated messages know it.
   */
  @Test
  void onlyTheProtobufWiresKnowProtobuf() {
    noClasses().that().resideOutsideOfPackages("io.kvrouter.cluster.replication.proto..",
            "io.kvrouter.cluster.admission.proto..", "io.kvrouter.cluster.serialization.proto..")
        .and().doNotHaveFullyQualifiedName("io.kvrouter.cluster.replication.ReplicationSerializer")
        .and().doNotHaveFullyQualifiedName("io.kvrouter.cluster.admission.RelaySerializer")
        .and().doNotHaveFullyQualifiedName("io.kvrouter.cluster.serialization.ProtoSerializer")
        .and().doNotHaveFullyQualifiedName("io.kvrouter.cluster.serialization.ProtoRecords")
        .should().dependOnClassesThat().resideInAPackage("com.google.protobuf..")
        .check(CLUSTER);
  }
}
