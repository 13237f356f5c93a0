
BlogitsJ(PMó<ÐY¿m‰>qˆ>¸yÑ½‰)¾¶¯Ù¼î¢Š>t@>šnb>