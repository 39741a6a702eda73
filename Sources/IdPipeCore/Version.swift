/// The version of idpipe, as `idpipe --version` prints it. Raised with each release: the minor number when a
/// pipeline-file key, a report field or the state store's schema is added, the major one when any is changed or removed.
public enum IdPipeVersion {
    public static let text = "0.8.0"
}
