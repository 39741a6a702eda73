/// The plan's fast path. Most accounts of a large export need nothing: already clean, not selected, named, no review.
/// Decoding each into an `Account` of strings, normalizing and classifying it, only to count it, was most of a plan's
/// time. So a decoder first reads a record's fields as bytes where they lie (`AccountBytes`) and asks
/// `AccountProcessor.fastPath`, which says, from the bytes alone, whether the full path would find nothing to do and
/// nothing to keep. Such an account is only counted (`PlainAccount`). Any doubt (a repair, a selection, a name to
/// fill, a review, an escape in the JSON, an odd value) sends the record the full way, which stays the reference: the
/// fast path never decides what the full path would decide otherwise, it only skips work whose result is known (all
/// of it, or only the normalize stage when every value passed that stage's checks).

/// One account's fields as UTF-8 bytes, where the decoder found them: valid only while the decoder's buffer is.
/// A decoder fills it only for a record it could read plainly; nil is a field that is absent, or null.
public struct AccountBytes {
    public typealias Bytes = UnsafeBufferPointer<UInt8>

    public var localId = Bytes(start: nil, count: 0)
    public var email: Bytes?
    public var displayName: Bytes?
    public var phoneNumber: Bytes?
    public var disabled = false
    public var createdAt: Int64?
    public var lastSignedInAt: Int64?
    /// The provider links, in order. Kept between records (emptied, not freed), so reading one allocates nothing.
    public var links: [LinkBytes] = []

    /// The fields the fast path does not need, which a decoder may read too, so that an account the fast path leaves
    /// to the full path is made from these bytes rather than read again (`complete` says whether they all are).
    public var emailVerified = false
    public var passwordHash: Bytes?
    public var salt: Bytes?
    public var photoUrl: Bytes?
    public var customAttributes: Bytes?
    /// The raw JSON text of `mfaInfo`.
    public var mfaInfo: Bytes?
    /// Whether every field of the record is here as its text (none had an escape).
    public var complete = true

    public init() {}

    /// Empties it for the next record, keeping the room of `links`.
    public mutating func reset() {
        localId = Bytes(start: nil, count: 0)
        email = nil
        displayName = nil
        phoneNumber = nil
        disabled = false
        createdAt = nil
        lastSignedInAt = nil
        links.removeAll(keepingCapacity: true)
        emailVerified = false
        passwordHash = nil
        salt = nil
        photoUrl = nil
        customAttributes = nil
        mfaInfo = nil
        complete = true
    }
}

/// A provider link's fields as bytes (see `AccountBytes`).
public struct LinkBytes {
    public var providerId: AccountBytes.Bytes
    public var rawId: AccountBytes.Bytes
    public var email: AccountBytes.Bytes?
    public var displayName: AccountBytes.Bytes?
    public var photoUrl: AccountBytes.Bytes?

    public init(providerId: AccountBytes.Bytes, rawId: AccountBytes.Bytes, email: AccountBytes.Bytes?, displayName: AccountBytes.Bytes?,
                photoUrl: AccountBytes.Bytes? = nil) {
        self.providerId = providerId
        self.rawId = rawId
        self.email = email
        self.displayName = displayName
        self.photoUrl = photoUrl
    }
}

/// What the plan counts of an account that needs nothing: the same counts `TallyCounter.count` takes from the full
/// path's outcome of it, which has no repair, no action, no review and no selection.
public struct PlainAccount: Sendable, Equatable {
    public enum Name: UInt8, Sendable {
        /// The pipeline does not fill names.
        case notAsked
        case present
        /// `NameOutcome.noSource(NameBackfill.noSourceHasAName)`.
        case noSource
    }

    public var idHash: UInt64
    /// The linked providers, bit `i` for `ProviderID.reported[i]` (all built in: one of them at most once).
    public var providers: UInt16
    public var disabled: Bool
    /// Nil when the pipeline does not detect relay accounts.
    public var relay: RelayClass?
    public var name: Name
}

extension PlainAccount {
    /// An account known by its id alone (the duplicate check's survey reads nothing else).
    public init(idHash: UInt64) {
        self.init(idHash: idHash, providers: 0, disabled: false, relay: nil, name: .notAsked)
    }
}

/// What the fast path needs from a pipeline, worked out once.
struct PlainRules: Sendable {
    /// False when the fast path cannot be taken at all (the pipeline does not normalize: the full path then keeps
    /// values as they come, which the checks here do not model).
    let enabled: Bool
    let detectRelay: Bool
    /// Nil when names are not filled.
    let nameSources: [PlainNameSource]?

    enum PlainNameSource: Sendable {
        case legacy
        /// A provider's name, by the provider's `reported` index; nil for an id that is not built in, which no link the
        /// fast path takes can have.
        case provider(Int?)
        case emailLocalPart
    }

    init(_ pipeline: PipelineDefinition) {
        enabled = pipeline.stages.normalize
        detectRelay = pipeline.stages.detectRelay
        nameSources = pipeline.stages.backfillNames?.map { source in
            switch source {
            case .legacy: .legacy
            case .provider(let id): .provider(id.withUTF8Bytes(ProviderID.builtInIndex))
            case .emailLocalPart: .emailLocalPart
            }
        }
    }

    static let apple = UInt16(1) << UInt16(ProviderID.reportIndex(ProviderID.apple))
    static let phone = UInt16(1) << UInt16(ProviderID.reportIndex(ProviderID.phone))
    static let nonAnonymous = ProviderID.reportedBits(ProviderID.nonAnonymous)
}

/// What the fast path makes of an account's bytes (`AccountProcessor.fastPath`).
public enum FastPathVerdict {
    /// It needs nothing: only counted.
    case plain(PlainAccount)
    /// The full path decides, but its values are already as the normalize stage leaves them (every check of that
    /// stage passed): it skips that stage (`DecodedRecord.normalized`).
    case normalized
    /// The full path decides, from the start.
    case unknown

    /// Whether the full path may skip the normalize stage (`DecodedRecord.account(_:_:normalized:)`).
    public var skipsNormalize: Bool {
        if case .normalized = self { true } else { false }
    }
}

extension AccountProcessor {
    /// Whether the full path (`process`) would find the account needs nothing, from its bytes alone, and if not, whether
    /// it would leave its values as they are when it normalizes them. Every check below is one the full path makes,
    /// answered only where the answer is certain: the value passes it unchanged. The test `PlainAccountTests` holds
    /// the two paths to the same result.
    public func fastPath(_ account: borrowing AccountBytes) -> FastPathVerdict {
        guard rules.enabled else { return .unknown }
        // Normalize: every value already as the normalizer would leave it, with no repair.
        let id = account.localId
        guard id.count > 0, id.count <= 128, TextScan.hasPlainEnds(id), !TextScan.hasControlByte(id) else { return .unknown }
        if let email = account.email, !EmailNormalizer.isAlreadyNormal(email) { return .unknown }
        if let phone = account.phoneNumber, !PhoneNormalizer.isAlreadyE164(phone) { return .unknown }
        if let name = account.displayName, !Self.isPlainName(name) { return .unknown }
        if let created = account.createdAt, created < AccountNormalizer.secondsThreshold { return .unknown }
        if let last = account.lastSignedInAt, last < AccountNormalizer.secondsThreshold { return .unknown }
        var providers: UInt16 = 0
        var namedProviders: UInt16 = 0
        var linkedEmailIsReal = false
        var appleEmailIsRelay = false
        var appleHasEmail = false
        for link in account.links {
            guard let index = ProviderID.builtInIndex(link.providerId) else { return .unknown }
            let bit = UInt16(1) << UInt16(index)
            guard providers & bit == 0, link.rawId.count > 0, TextScan.hasPlainEnds(link.rawId) else { return .unknown }
            providers |= bit
            if let email = link.email {
                // The account's own address (most often) is normalized already; another must need nothing.
                if !(account.email.map { TextScan.sameBytes($0, email) } ?? false) && !EmailNormalizer.isAlreadyNormal(email) { return .unknown }
                let isRelay = RelayDetection.isRelayAddress(email)
                if !isRelay { linkedEmailIsReal = true }
                if bit == PlainRules.apple {
                    appleHasEmail = true
                    appleEmailIsRelay = isRelay
                }
            }
            if let name = link.displayName {
                guard Self.isPlainName(name) else { return .unknown }
                namedProviders |= bit
            }
        }
        // From here on the values are as the normalizer leaves them: an account the fast path does not take skips it.
        // Times that cannot be right are counted by the full path (`OddTimes`).
        if !OddTimes(createdAt: account.createdAt, lastSignedInAt: account.lastSignedInAt, asOf: selector.asOf).isEmpty { return .normalized }

        // Detect relay (`RelayDetection.classify`): a relay account linked to identifying data without consent needs review.
        let idHash = IdHash.of(id)
        let emailIsRelay = account.email.map(RelayDetection.isRelayAddress) ?? false
        let isRelay = emailIsRelay || appleEmailIsRelay
        var relay: RelayClass?
        if rules.detectRelay {
            if isRelay {
                let linkedData = providers & PlainRules.nonAnonymous != 0 || (account.email != nil && !emailIsRelay) || linkedEmailIsReal
                    || account.phoneNumber != nil || providers & PlainRules.phone != 0
                if linkedData && !(sideInputs.legacyNames[bytes: id, hash: idHash]?.consent ?? false) { return .normalized }
                relay = .relayAddress
            } else if providers & PlainRules.apple == 0 {
                relay = .notApple
            } else {
                relay = account.email != nil || appleHasEmail ? .appleRealEmail : .appleNoEmail
            }
        }

        // Select: no rule matches. An account with a deletion request is kept whether or not it is selected
        // (`AccountOutcome.isNoteworthy`): the full path decides, and gives its name no source.
        if sideInputs.deletionRequests.contains(bytes: id, hash: idHash) { return .normalized }
        guard selector.reasons(deletionRequested: false, disabled: account.disabled, lastSignedInAt: account.lastSignedInAt,
                               createdAt: account.createdAt).isEmpty else { return .normalized }

        // Fill names: named already, or no source has anything to offer (`NameBackfill.plan` would try each).
        var name = PlainAccount.Name.notAsked
        if let sources = rules.nameSources {
            if account.displayName != nil {
                name = .present
            } else {
                for source in sources {
                    switch source {
                    case .legacy: if sideInputs.legacyNames.contains(bytes: id, hash: idHash) { return .normalized }
                    case .provider(let index?): if namedProviders & UInt16(1) << UInt16(index) != 0 { return .normalized }
                    case .provider(nil): break
                    case .emailLocalPart: if account.email != nil && !isRelay { return .normalized }
                    }
                }
                name = .noSource
            }
        }
        return .plain(PlainAccount(idHash: idHash, providers: providers, disabled: account.disabled, relay: relay, name: name))
    }

    /// A name the cleaner keeps as it is (`DisplayNameCleaner.clean`): not empty, clean, and short enough in bytes
    /// (so in characters).
    private static func isPlainName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        name.count > 0 && name.count <= DisplayNameCleaner.maxCharacters && DisplayNameCleaner.isAlreadyClean(name)
    }
}
