import IdPipeCore

/// A JWT claim or header value: the claims idpipe signs are strings and integers only.
public enum JWTValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
}

/// Builds compact JWS tokens (`header.claims.signature`, each base64url) with the members in the order given.
public enum JWT {
    public static func sign(header: [(String, JWTValue)], claims: [(String, JWTValue)], key: SigningKey) throws(CryptoError) -> String {
        let fullHeader = [("alg", JWTValue.string(key.algorithm.rawValue))] + header.filter { $0.0 != "alg" }
        let signingInput = Base64URL.encode(json(fullHeader)) + "." + Base64URL.encode(json(claims))
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// A JSON object of the members, in order. Strings are escaped per RFC 8259.
    static func json(_ members: [(String, JWTValue)]) -> String {
        var out = "{"
        for (index, (name, value)) in members.enumerated() {
            if index > 0 { out += "," }
            out += JSONText.string(name) + ":"
            switch value {
            case .string(let text): out += JSONText.string(text)
            case .int(let number): out += String(number)
            }
        }
        return out + "}"
    }
}
