import IdPipeCore

/// What an export decoder asks about each record it read as bytes: the fast path's verdict (`AccountProcessor`), or
/// nothing when the batch is decoded the full way. The decoders are generic over it, so that the processor is
/// borrowed where it lies: bound from an optional for each record, the 1.2 kB struct was copied twice a record, and
/// reached through a pointer, copied with a retain of every array it holds.
protocol FastPathCheck {
    /// False: no record is read as bytes first.
    static var enabled: Bool { get }
    func verdict(_ account: borrowing AccountBytes) -> FastPathVerdict
}

/// Every record the full way.
struct FullPathOnly: FastPathCheck {
    static var enabled: Bool { false }
    func verdict(_ account: borrowing AccountBytes) -> FastPathVerdict { .unknown }
}

extension AccountProcessor: FastPathCheck {
    static var enabled: Bool { true }
    func verdict(_ account: borrowing AccountBytes) -> FastPathVerdict { fastPath(account) }
}

/// The duplicate check's survey (`RawBatch.decodeIds`): every record read as bytes is taken, with only its id's hash.
struct IdsOnly: FastPathCheck {
    static var enabled: Bool { true }
    func verdict(_ account: borrowing AccountBytes) -> FastPathVerdict {
        .plain(PlainAccount(idHash: IdHash.of(account.localId)))
    }
}
